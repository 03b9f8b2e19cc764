"""The recorder's tests run ``tide record`` under the RBAC that deploy/ grants it: a module
that says ``pytestmark = pytest.mark.usefixtures("under_the_record_role")`` has the API
double enforce ``kubectl apply -k deploy/overlays/record/`` as the ``tide-record`` service account
(:func:`tests.kuberbac.record_rbac`), so a call the role does not grant answers 403 and
fails the test at teardown."""

from __future__ import annotations

import pytest

from tests.kubedouble import ApiDouble
from tests.kuberbac import record_rbac


@pytest.fixture
def under_the_record_role(request: pytest.FixtureRequest) -> None:
    """The double (when the test uses one) enforces the recorder account's RBAC."""
    if "double" in request.fixturenames:
        double = request.getfixturevalue("double")
        assert isinstance(double, ApiDouble)
        double.rbac = record_rbac()
