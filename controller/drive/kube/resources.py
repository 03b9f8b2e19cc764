"""The API collections tide reads, by the name they carry on the log.

One table, so that the sources, the RBAC manifests' test and the API double agree on the
paths: a ``k8s.watch`` record's ``resource`` is the collection's plural name, and each
names its API group, version and whether a CRD serves it (Volcano's PodGroups and Queues;
a missing CRD is a warning, not an error).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["METRICS", "WATCHED", "ApiResource"]


@dataclass(frozen=True, slots=True)
class ApiResource:
    """An API collection: ``group`` ("" for the core API), ``version``, ``plural``."""

    group: str
    version: str
    plural: str
    optional: bool = False
    """Served by a CRD or an aggregated API that may not be installed."""

    @property
    def path(self) -> str:
        """The collection's path across all namespaces."""
        prefix = "/api" if not self.group else f"/apis/{self.group}"
        return f"{prefix}/{self.version}/{self.plural}"


#: the collections the watch sources list and watch, in the order they start
WATCHED: tuple[ApiResource, ...] = (
    ApiResource("", "v1", "nodes"),
    ApiResource("", "v1", "pods"),
    ApiResource("scheduling.volcano.sh", "v1beta1", "queues", optional=True),
    ApiResource("scheduling.volcano.sh", "v1beta1", "podgroups", optional=True),
    ApiResource("policy", "v1", "poddisruptionbudgets"),
)

#: the metrics-server collections the metrics source polls (type of record → collection)
METRICS: dict[str, ApiResource] = {
    "metrics.node": ApiResource("metrics.k8s.io", "v1beta1", "nodes", optional=True),
    "metrics.pod": ApiResource("metrics.k8s.io", "v1beta1", "pods", optional=True),
}
