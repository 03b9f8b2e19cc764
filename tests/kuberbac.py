"""RBAC for the API double, authorized as kube-apiserver's RBAC authorizer does.

Why: a ClusterRole in deploy/ that lacks a verb tide uses is otherwise found only on a real
cluster, where the call answers 403 (``tide run``'s reconcile on start read pods its role
did not grant). Given the RBAC objects of the manifests a test deploys (:meth:`Rbac.deployed`
reads a kustomization and the Deployment's service account) and the identity a client
connects as, the double (:attr:`tests.kubedouble.ApiDouble.rbac`) authorizes every request
and answers a denial with the real body. So least privilege is proven by every test that
runs tide under the role it deploys, not by a list of calls kept beside the role.

As the Kubernetes sources do it:

* rules: ``pkg/apis/rbac/v1/evaluation_helpers.go`` ``RuleAllows``: the verb, the API group
  and ``resource[/subresource]`` each match a listed value or ``*`` (``*/sub`` matches a
  subresource of any resource), and ``resourceNames``, when given, must hold the request's
  name (a ``create`` or a ``list`` has none, so it never matches);
* bindings: a ClusterRoleBinding grants everywhere, a RoleBinding (of a Role or a
  ClusterRole) only in its namespace; a subject matches a ``User`` by name, a ``Group`` by
  one of the user's groups, a ``ServiceAccount`` as ``system:serviceaccount:NS:NAME``;
  a service account's groups are ``system:serviceaccounts``,
  ``system:serviceaccounts:NS`` and ``system:authenticated``;
* the 403: ``staging/src/k8s.io/apiserver/pkg/endpoints/handlers/responsewriters/errors.go``
  ``Forbidden`` (its ``forbiddenMessage``) wrapped by ``apierrors.NewForbidden``: a
  ``Status`` with ``reason: Forbidden``, ``details`` naming the group, the resource (as
  ``kind``) and the name, and the message ``RESOURCE[.GROUP] ["NAME" ]is forbidden: User
  "U" cannot VERB resource "R[/SUB]" in API group "G" in the namespace "NS"`` (``at the
  cluster scope`` without a namespace). The RBAC authorizer gives no reason of its own when
  no rule matched, so none is appended.

The cluster's default roles (``system:discovery``, ``system:basic-user`` ...) are not
modelled: tide calls nothing they grant, and the double has no route for it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

__all__ = [
    "Attributes",
    "Rbac",
    "Rule",
    "forbidden_status",
    "record_rbac",
    "run_rbac",
    "service_account_user",
]

#: the kinds of rbac.authorization.k8s.io/v1 the double models
RBAC_KINDS = ("ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")
DEPLOY = Path(__file__).resolve().parents[1] / "deploy"


def service_account_user(namespace: str, name: str) -> str:
    """The user name a service account's token authenticates as."""
    return f"system:serviceaccount:{namespace}:{name}"


def _groups_of(user: str) -> tuple[str, ...]:
    parts = user.split(":")
    if len(parts) == 4 and parts[:2] == ["system", "serviceaccount"]:
        return (
            "system:serviceaccounts",
            f"system:serviceaccounts:{parts[2]}",
            "system:authenticated",
        )
    if user == "system:anonymous":
        return ("system:unauthenticated",)
    return ("system:authenticated",)


@dataclass(frozen=True)
class Attributes:
    """What one request asks (the authorizer's ``Attributes`` of a resource request)."""

    user: str
    verb: str
    group: str
    version: str
    resource: str
    subresource: str = ""
    namespace: str = ""
    name: str = ""


@dataclass(frozen=True)
class Rule:
    """One ``PolicyRule`` of a role."""

    verbs: frozenset[str]
    groups: frozenset[str]
    resources: frozenset[str]
    names: frozenset[str] = frozenset()

    @classmethod
    def parse(cls, rule: dict[str, Any]) -> Rule:
        """A rule of a manifest (a rule of ``nonResourceURLs`` raises: none is modelled)."""
        if rule.get("nonResourceURLs"):
            raise ValueError(f"the double models no nonResourceURLs rule: {rule}")
        return cls(
            frozenset(rule.get("verbs") or ()),
            frozenset(rule.get("apiGroups") or ()),
            frozenset(rule.get("resources") or ()),
            frozenset(rule.get("resourceNames") or ()),
        )

    def allows(self, asked: Attributes) -> bool:
        """Whether this rule grants ``asked`` (``RuleAllows``)."""
        combined = asked.resource + (f"/{asked.subresource}" if asked.subresource else "")
        resource = (
            "*" in self.resources
            or combined in self.resources
            or (bool(asked.subresource) and f"*/{asked.subresource}" in self.resources)
        )
        return (
            ("*" in self.verbs or asked.verb in self.verbs)
            and ("*" in self.groups or asked.group in self.groups)
            and resource
            and (not self.names or asked.name in self.names)
        )


@dataclass(frozen=True)
class _Binding:
    role: tuple[str, str]  # (kind, name); a Role's name is NAMESPACE/NAME
    subjects: tuple[tuple[str, str], ...]  # (kind, user or group name)
    namespace: str | None  # None: a ClusterRoleBinding

    def applies_to(self, user: str) -> bool:
        groups = _groups_of(user)
        for kind, name in self.subjects:
            if (kind in ("User", "ServiceAccount") and name == user) or (
                kind == "Group" and name in groups
            ):
                return True
        return False


@dataclass
class Rbac:
    """The roles and bindings a test deployed, and who the clients are.

    Attributes:
        user: the identity every request is made as, unless its bearer token is in ``tokens``.
        tokens: bearer token → user name, for a test whose clients connect as different users.
    """

    user: str
    tokens: dict[str, str] = field(default_factory=dict)
    roles: dict[tuple[str, str], tuple[Rule, ...]] = field(default_factory=dict)
    bindings: list[_Binding] = field(default_factory=list)

    @classmethod
    def of(cls, manifests: Iterable[dict[str, Any]], *, user: str) -> Rbac:
        """The RBAC objects among ``manifests`` (other kinds are ignored), as ``user``."""
        rbac = cls(user)
        for doc in manifests:
            kind, meta = doc.get("kind"), doc.get("metadata") or {}
            if doc.get("apiVersion") != "rbac.authorization.k8s.io/v1" or kind not in RBAC_KINDS:
                continue
            namespace = meta.get("namespace") if kind in ("Role", "RoleBinding") else None
            if kind in ("ClusterRole", "Role"):
                if doc.get("aggregationRule"):
                    raise ValueError(f"the double models no aggregated ClusterRole: {meta}")
                rules = tuple(Rule.parse(r) for r in doc.get("rules") or ())
                rbac.roles[(kind, _scoped(namespace, meta["name"]))] = rules
                continue
            ref = doc["roleRef"]
            subjects = tuple(
                (
                    s["kind"],
                    service_account_user(s.get("namespace") or namespace or "", s["name"])
                    if s["kind"] == "ServiceAccount"
                    else s["name"],
                )
                for s in doc.get("subjects") or ()
            )
            role = (ref["kind"], _scoped(namespace if ref["kind"] == "Role" else None, ref["name"]))
            rbac.bindings.append(_Binding(role, subjects, namespace))
        return rbac

    @classmethod
    def deployed(cls, *kustomizations: Path, deployment: Path) -> Rbac:
        """The RBAC objects of every manifest the ``kustomization.yaml`` of each directory
        lists (a listed directory is read the same way), as the service account that
        ``deployment`` (a Deployment manifest) runs its pods as."""
        [workload] = [d for d in _load(deployment) if d.get("kind") == "Deployment"]
        account = workload["spec"]["template"]["spec"].get("serviceAccountName") or "default"
        user = service_account_user(workload["metadata"]["namespace"], account)
        docs = [doc for directory in kustomizations for doc in _kustomized(directory)]
        return cls.of(docs, user=user)

    def identity(self, authorization: str) -> str:
        """The user a request's ``Authorization`` header authenticates as."""
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() == "bearer" and token.strip() in self.tokens:
            return self.tokens[token.strip()]
        return self.user

    def allows(self, asked: Attributes) -> bool:
        """Whether a binding of ``asked.user`` grants the request."""
        for binding in self.bindings:
            if binding.namespace is not None and binding.namespace != asked.namespace:
                continue
            if not binding.applies_to(asked.user):
                continue
            if any(rule.allows(asked) for rule in self.roles.get(binding.role, ())):
                return True
        return False


def forbidden_status(asked: Attributes) -> dict[str, Any]:
    """The ``Status`` a denied request is answered with (see the module docstring)."""
    resource = asked.resource + (f"/{asked.subresource}" if asked.subresource else "")
    where = f'in the namespace "{asked.namespace}"' if asked.namespace else "at the cluster scope"
    why = (
        f'User "{asked.user}" cannot {asked.verb} resource "{resource}"'
        f' in API group "{asked.group}" {where}'
    )
    qualified = asked.resource + (f".{asked.group}" if asked.group else "")
    named = f' "{asked.name}"' if asked.name else ""
    details = {"name": asked.name, "group": asked.group, "kind": asked.resource}
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f"{qualified}{named} is forbidden: {why}",
        "reason": "Forbidden",
        "details": {k: v for k, v in details.items() if v},
        "code": 403,
    }


def record_rbac() -> Rbac:
    """What ``kubectl apply -k deploy/overlays/record/`` grants, as the recorder's service
    account."""
    record = DEPLOY / "overlays" / "record"
    return Rbac.deployed(record, deployment=record / "deployment.yaml")


def run_rbac() -> Rbac:
    """What ``kubectl apply -k deploy/`` (deploy/base/) grants, as ``tide run``'s service
    account."""
    return Rbac.deployed(DEPLOY / "base", deployment=DEPLOY / "base" / "deployment.yaml")


def _scoped(namespace: str | None, name: str) -> str:
    return f"{namespace}/{name}" if namespace else name


def _load(path: Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


def _kustomized(directory: Path) -> Iterator[dict[str, Any]]:
    kustomization = yaml.safe_load((directory / "kustomization.yaml").read_text())
    for resource in kustomization.get("resources") or ():
        path = (directory / resource).resolve()
        if path.is_dir():
            yield from _kustomized(path)
        else:
            yield from _load(path)
