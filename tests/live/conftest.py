"""The live tests run ``tide run`` (and its effector) under the RBAC that deploy/ grants it.

Every test here that uses the API double has it enforce ``kubectl apply -k deploy/``
(deploy/base/) as the ``tide-run`` service account (:func:`tests.kuberbac.run_rbac`):
a call the role does not grant answers 403 and fails the test at teardown, so each live
test proves the role grants what it exercised.
"""

from __future__ import annotations

import pytest

from tests.kubedouble import ApiDouble
from tests.kuberbac import run_rbac


@pytest.fixture(autouse=True)
def _under_the_run_role(request: pytest.FixtureRequest) -> None:
    """The double (when the test uses one) enforces the run account's RBAC."""
    if "double" in request.fixturenames:
        double = request.getfixturevalue("double")
        assert isinstance(double, ApiDouble)
        double.rbac = run_rbac()
