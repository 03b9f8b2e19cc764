"""A deterministic generator of a large, realistic tide recording (JSON Lines).

The recording is what a capture of a co-located cluster would hold (the format
:mod:`streams.recording` reads): one ``{"at", "type", "data"}`` object per line with sorted keys, in
time order. It starts with the initial list (queues, nodes, PodGroups, pods, one round of metric
samples) and goes on with churn: pod restarts (some ``OOMKilled``), pods deleted and recreated by
their owners, node heartbeats and more metric rounds.

Everything is drawn from one ``random.Random(seed)``; no wall clock is read, so the
same options always give the same bytes. Default size: 5,000 nodes (10 % in revocable
zone ``rz1``, 5 % in ``rz2``), 150,000 pods of ~6 KB (web Deployments and StatefulSets
with QoS ``LS``, Volcano batch jobs with QoS ``BE``, PodGroups and queues, preemptable
and revocable pods, one DaemonSet, ``pending`` Pending pods without ``nodeName``).

Run ``python -m benchmarks.generate [--scale small] [--out DIR]``; the benchmarks call
:func:`ensure_recording`, which reuses a file already generated with the same options
by the same generator source.
"""

from __future__ import annotations

import argparse
import hashlib
import random
import sys
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import IO, Any

import orjson

JSON = dict[str, Any]

OUT_DIR = Path(__file__).resolve().parent / "out"
T0 = datetime(2026, 11, 21, 20, 0, tzinfo=UTC)
ZONE_LABEL = "volcano.sh/revocable-zone"
QOS_LABEL = "koordinator.sh/qosClass"
GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
_SORTED = orjson.OPT_SORT_KEYS
GiB = 2**30


@dataclass(frozen=True, slots=True)
class Scale:
    """What to generate. ``pods`` counts the pods alive at the end (DaemonSet included)."""

    nodes: int = 5_000
    pods: int = 150_000
    pending: int = 1_000
    seed: int = 20261121
    rz1_fraction: float = 0.10
    rz2_fraction: float = 0.05
    node_metric_rounds: int = 3
    pod_metric_rounds: int = 1
    restart_fraction: float = 0.08  # pods that get a restart (MODIFIED) during churn
    recreate_fraction: float = 0.03  # pods deleted and recreated by their owner
    ids: bool = False  # write an "id" on each line (as `tide log export` does)

    @property
    def name(self) -> str:
        ids = "-ids" if self.ids else ""
        return f"recording-{self.nodes}n-{self.pods}p-{self.pending}q-s{self.seed}{ids}"


SCALES: dict[str, Scale] = {
    "full": Scale(),
    "medium": Scale(nodes=1_000, pods=30_000, pending=1_000),
    "small": Scale(nodes=200, pods=6_000, pending=200),
    "tiny": Scale(nodes=20, pods=300, pending=10),
}


@dataclass(slots=True)
class Manifest:
    """What a generated recording holds (written next to it as ``.meta.json``)."""

    scale: JSON
    path: str
    source_hash: str
    lines: int = 0
    bytes: int = 0
    by_type: dict[str, int] = field(default_factory=dict)
    by_watch: dict[str, int] = field(default_factory=dict)
    pod_bytes_mean: float = 0.0
    pods_final: int = 0
    pending_final: int = 0
    zone_nodes: dict[str, int] = field(default_factory=dict)
    start: str = ""
    end: str = ""


def fmt(at: datetime) -> str:
    """``streams.events.format_time`` for whole seconds (kept local: no tide import)."""
    return at.strftime("%Y-%m-%dT%H:%M:%SZ")


# -- the cluster's shape ----------------------------------------------------------------

_INSTANCE_TYPES = [  # (type, cpu, memory GiB, pods)
    ("m6i.16xlarge", 64, 256, 110),
    ("r6i.16xlarge", 64, 512, 110),
    ("c6i.24xlarge", 96, 192, 250),
    ("m6i.32xlarge", 128, 512, 250),
]
_REGION = "eu-west-1"
_AZS = ["eu-west-1a", "eu-west-1b", "eu-west-1c"]
_TEAMS = ["search", "ads", "feeds", "payments", "risk", "ml-platform", "infra", "data"]
_ENVS = ["prod", "prod", "prod", "staging"]
_IMAGES = [
    "registry.example.com/{team}/{app}:v{major}.{minor}.{patch}",
    "registry.example.com/{team}/{app}-server:{major}.{minor}.{patch}-r{rev}",
]
_APPS = ["api", "web", "worker", "cache", "ingest", "rank", "train", "etl", "infer", "sync"]
_QUEUES = ["default", "batch-high", "batch-low", "ml-train", "ml-infer", "etl", "adhoc", "research"]


@dataclass(slots=True)
class Workload:
    """A Deployment / StatefulSet / Volcano Job / DaemonSet: what its pods share."""

    kind: str  # Deployment | StatefulSet | Job | DaemonSet
    namespace: str
    name: str
    replicas: int
    qos: str
    labels: JSON
    annotations: JSON
    owner: JSON
    containers: list[JSON]
    requests: list[tuple[int, int]]  # (milli-cpu, memory bytes) per container
    volumes: list[JSON]
    tolerations: list[JSON]
    priority_class: str
    priority: int
    revocable: bool
    affinity: JSON | None
    image_ids: list[str]
    next_ordinal: int = 0


@dataclass(slots=True)
class PodState:
    """A live pod, as the generator needs it again for churn."""

    workload: int
    name: str
    uid: str
    node: int  # index into the generator's nodes; -1 while Pending
    ip: str
    created: str
    started: str
    restarts: list[int]
    oom: bool = False
    rv: int = 0


class Generator:
    """Writes one recording; see the module docstring."""

    def __init__(self, scale: Scale) -> None:
        self.scale = scale
        self.rng = random.Random(scale.seed)
        self.rv = 1_000_000
        self.ip = 0
        self.nodes: list[JSON] = []
        self.node_names: list[str] = []
        self.node_zone: list[str] = []
        self.node_free: list[list[int]] = []  # [milli-cpu, memory, pods] left per node
        self.normal_nodes: list[int] = []
        self.zone_nodes: list[int] = []
        self.workloads: list[Workload] = []
        self.podgroups: list[JSON] = []
        self.pods: list[PodState | None] = []
        self.pending: set[int] = set()
        self.counts: Counter[str] = Counter()
        self.watch_counts: Counter[str] = Counter()
        self.pod_bytes = 0
        self.pod_lines = 0
        self.lines = 0
        self.bytes = 0
        self.now = T0
        if scale.ids:
            from streams.events import content_id  # only needed for id'd recordings

            self._content_id = content_id

    # -- helpers ------------------------------------------------------------------------

    def uid(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def next_rv(self) -> str:
        self.rv += self.rng.randint(1, 40)
        return str(self.rv)

    def next_ip(self) -> str:
        self.ip += 1
        n = self.ip
        return f"10.{64 + (n >> 16) % 64}.{(n >> 8) & 255}.{n & 255}"

    def hexid(self, n: int) -> str:
        return f"{self.rng.getrandbits(4 * n):0{n}x}"

    # -- nodes --------------------------------------------------------------------------

    def build_nodes(self) -> None:
        s = self.scale
        rz1 = round(s.nodes * s.rz1_fraction)
        rz2 = round(s.nodes * s.rz2_fraction)
        zones = ["rz1"] * rz1 + ["rz2"] * rz2 + [""] * (s.nodes - rz1 - rz2)
        self.rng.shuffle(zones)
        for i, zone in enumerate(zones):
            itype, cpu, mem_gi, max_pods = self.rng.choice(_INSTANCE_TYPES)
            name = (
                f"ip-10-{i // 250}-{i % 250}-{self.rng.randint(1, 254)}.{_REGION}.compute.internal"
            )
            az = _AZS[i % len(_AZS)]
            control_plane = i < 3
            not_ready = not control_plane and self.rng.random() < 0.002
            cordoned = not control_plane and not not_ready and self.rng.random() < 0.003
            labels: JSON = {
                "beta.kubernetes.io/arch": "amd64",
                "beta.kubernetes.io/instance-type": itype,
                "beta.kubernetes.io/os": "linux",
                "failure-domain.beta.kubernetes.io/region": _REGION,
                "failure-domain.beta.kubernetes.io/zone": az,
                "kubernetes.io/arch": "amd64",
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "node.kubernetes.io/instance-type": itype,
                "topology.kubernetes.io/region": _REGION,
                "topology.kubernetes.io/zone": az,
                "nodepool": "revocable" if zone else ("system" if control_plane else "general"),
            }
            if control_plane:
                labels["node-role.kubernetes.io/control-plane"] = ""
            if zone:
                labels[ZONE_LABEL] = zone
            taints: list[JSON] = []
            if control_plane:
                taints.append(
                    {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}
                )
            if not_ready:
                taints.append(
                    {
                        "key": "node.kubernetes.io/not-ready",
                        "effect": "NoExecute",
                        "timeAdded": fmt(T0 - timedelta(minutes=3)),
                    }
                )
            if cordoned:
                taints.append(
                    {
                        "key": "node.kubernetes.io/unschedulable",
                        "effect": "NoSchedule",
                        "timeAdded": fmt(T0 - timedelta(hours=2)),
                    }
                )
            reserved_cpu = 100 + cpu * 10  # milli
            reserved_mem = (1 + mem_gi // 64) * GiB
            alloc_cpu = cpu * 1000 - reserved_cpu
            alloc_mem = mem_gi * GiB - reserved_mem
            created = T0 - timedelta(
                days=self.rng.randint(1, 300), seconds=self.rng.randint(0, 86399)
            )
            node: JSON = {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {
                    "name": name,
                    "uid": self.uid(),
                    "resourceVersion": self.next_rv(),
                    "creationTimestamp": fmt(created),
                    "labels": labels,
                    "annotations": {
                        "alpha.kubernetes.io/provided-node-ip": f"10.{i // 250}.{i % 250}.10",
                        "csi.volume.kubernetes.io/nodeid": orjson.dumps(
                            {"ebs.csi.aws.com": f"i-{self.hexid(17)}"}
                        ).decode(),
                        "node.alpha.kubernetes.io/ttl": "0",
                        "volumes.kubernetes.io/controller-managed-attach-detach": "true",
                    },
                },
                "spec": {
                    "podCIDR": f"100.{64 + i // 256}.{i % 256}.0/24",
                    "podCIDRs": [f"100.{64 + i // 256}.{i % 256}.0/24"],
                    "providerID": f"aws:///{az}/i-{self.hexid(17)}",
                },
                "status": {
                    "capacity": {
                        "cpu": str(cpu),
                        "ephemeral-storage": "524275692Ki",
                        "hugepages-1Gi": "0",
                        "hugepages-2Mi": "0",
                        "memory": f"{mem_gi * 1024 * 1024}Ki",
                        "pods": str(max_pods),
                    },
                    "allocatable": {
                        "cpu": f"{alloc_cpu}m",
                        "ephemeral-storage": "483170324033",
                        "hugepages-1Gi": "0",
                        "hugepages-2Mi": "0",
                        "memory": f"{alloc_mem // 1024}Ki",
                        "pods": str(max_pods),
                    },
                    "conditions": self.node_conditions(not_ready, T0),
                    "addresses": [
                        {"type": "InternalIP", "address": f"10.{i // 250}.{i % 250}.10"},
                        {"type": "Hostname", "address": name},
                        {"type": "InternalDNS", "address": name},
                    ],
                    "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
                    "nodeInfo": {
                        "architecture": "amd64",
                        "bootID": self.uid(),
                        "containerRuntimeVersion": "containerd://1.7.22",
                        "kernelVersion": "6.1.112-124.190.amzn2023.x86_64",
                        "kubeProxyVersion": "v1.30.4-eks-a737599",
                        "kubeletVersion": "v1.30.4-eks-a737599",
                        "machineID": self.hexid(32),
                        "operatingSystem": "linux",
                        "osImage": "Amazon Linux 2023.6.20241010",
                        "systemUUID": self.uid(),
                    },
                },
            }
            if taints:
                node["spec"]["taints"] = taints
            if cordoned:
                node["spec"]["unschedulable"] = True
            self.nodes.append(node)
            self.node_names.append(name)
            self.node_zone.append(zone)
            schedulable = not (control_plane or not_ready or cordoned)
            # leave ~15 % of every node unrequested, so allocate has room
            self.node_free.append(
                [int(alloc_cpu * 0.85), int(alloc_mem * 0.85), max_pods]
                if schedulable
                else [0, 0, 0]
            )
            if schedulable:
                (self.zone_nodes if zone else self.normal_nodes).append(i)

    def node_conditions(self, not_ready: bool, now: datetime) -> list[JSON]:
        beat = fmt(now - timedelta(seconds=self.rng.randint(0, 40)))
        since = fmt(T0 - timedelta(days=3))
        conditions = []
        for kind, reason, message in (
            (
                "MemoryPressure",
                "KubeletHasSufficientMemory",
                "kubelet has sufficient memory available",
            ),
            ("DiskPressure", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
            ("PIDPressure", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
        ):
            conditions.append(
                {
                    "type": kind,
                    "status": "False",
                    "lastHeartbeatTime": beat,
                    "lastTransitionTime": since,
                    "reason": reason,
                    "message": message,
                }
            )
        ready: JSON = {"type": "Ready", "lastHeartbeatTime": beat, "lastTransitionTime": since}
        if not_ready:
            ready.update(
                status="Unknown",
                reason="NodeStatusUnknown",
                message="Kubelet stopped posting node status.",
            )
        else:
            ready.update(
                status="True", reason="KubeletReady", message="kubelet is posting ready status"
            )
        conditions.append(ready)
        return conditions

    # -- workloads ----------------------------------------------------------------------

    def build_workloads(self) -> None:
        s = self.scale
        rng = self.rng
        daemon = min(len(self.normal_nodes) + len(self.zone_nodes), max(0, s.pods // 30))
        budget = s.pods - daemon
        if daemon:
            self.workloads.append(
                self.workload("DaemonSet", "kube-system", "node-exporter", daemon)
            )
        namespaces = [f"{team}-{env}" for team in _TEAMS for env in ("prod", "staging")]
        index = 0
        while budget > 0:
            index += 1
            roll = rng.random()
            ns = rng.choice(namespaces)
            if roll < 0.40:
                kind, replicas = "Deployment", rng.choice([2, 3, 3, 5, 8, 12, 20, 40, 80])
            elif roll < 0.52:
                kind, replicas = "StatefulSet", rng.choice([1, 3, 3, 5, 7, 12])
            else:
                kind, replicas = "Job", rng.choice([1, 2, 4, 8, 16, 32, 64, 128])
            replicas = min(replicas, budget)
            budget -= replicas
            app = f"{rng.choice(_APPS)}-{index}"
            self.workloads.append(self.workload(kind, ns, app, replicas))

    def workload(self, kind: str, namespace: str, app: str, replicas: int) -> Workload:
        rng = self.rng
        team = namespace.rsplit("-", 1)[0]
        batch = kind == "Job"
        qos = "BE" if batch else ("SYSTEM" if kind == "DaemonSet" else "LS")
        revocable = batch and rng.random() < 0.5
        preemptable = batch or (kind == "Deployment" and rng.random() < 0.1)
        labels: JSON = {
            "app": app,
            "app.kubernetes.io/name": app,
            "app.kubernetes.io/component": "batch" if batch else "server",
            "app.kubernetes.io/part-of": team,
            "team": team,
            "env": namespace.rsplit("-", 1)[1],
            "version": f"v{rng.randint(1, 9)}.{rng.randint(0, 30)}",
        }
        if kind != "DaemonSet":
            labels[QOS_LABEL] = qos
        annotations: JSON = {
            "prometheus.io/scrape": "true",
            "prometheus.io/port": str(rng.choice([8080, 9090, 9100, 9102])),
            "cluster-autoscaler.kubernetes.io/safe-to-evict": "true" if preemptable else "false",
        }
        owner_uid = self.uid()
        owner: JSON
        if kind == "Deployment":
            template_hash = self.hexid(10)[:10]
            labels["pod-template-hash"] = template_hash
            owner = {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "name": f"{app}-{template_hash}",
            }
            annotations["kubectl.kubernetes.io/restartedAt"] = fmt(
                T0 - timedelta(days=rng.randint(1, 30))
            )
        elif kind == "StatefulSet":
            labels["controller-revision-hash"] = f"{app}-{self.hexid(10)}"
            owner = {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": app}
        elif kind == "DaemonSet":
            labels["controller-revision-hash"] = self.hexid(10)
            labels["pod-template-generation"] = "7"
            owner = {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": app}
        else:
            queue = rng.choice(_QUEUES)
            labels["volcano.sh/job-name"] = app
            labels["volcano.sh/job-namespace"] = namespace
            labels["volcano.sh/queue-name"] = queue
            labels["volcano.sh/task-spec"] = "worker"
            owner = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": app}
            annotations.update(
                {
                    GROUP_ANNOTATION: f"{app}-{owner_uid}",
                    "volcano.sh/job-name": app,
                    "volcano.sh/job-version": "0",
                    "volcano.sh/queue-name": queue,
                    "volcano.sh/task-spec": "worker",
                    "volcano.sh/template-uid": f"{app}-worker",
                }
            )
            self.podgroups.append(
                self.podgroup(namespace, app, owner_uid, replicas, queue, preemptable, revocable)
            )
        if preemptable:
            annotations["volcano.sh/preemptable"] = "true"
        if revocable:
            annotations[ZONE_LABEL] = "*"
        owner.update(uid=owner_uid, controller=True, blockOwnerDeletion=True)

        n_containers = 1 if kind == "DaemonSet" else rng.choice([1, 1, 2, 2, 3])
        containers: list[JSON] = []
        requests: list[tuple[int, int]] = []
        image_ids: list[str] = []
        for c in range(n_containers):
            cname = (
                "main"
                if c == 0
                else rng.choice(["sidecar", "envoy", "log-agent", "config-reloader"]) + f"-{c}"
            )
            if kind == "DaemonSet":
                cpu_m, mem = 50, 64 * 2**20
            elif c == 0:
                cpu_m = rng.choice([100, 250, 500, 500, 1000, 1000, 2000, 4000])
                mem = rng.choice([256, 512, 1024, 2048, 4096, 8192]) * 2**20
            else:
                cpu_m, mem = rng.choice([50, 100, 200]), rng.choice([64, 128, 256]) * 2**20
            best_effort = batch and c == 0 and rng.random() < 0.05
            requests.append((0, 0) if best_effort else (cpu_m, mem))
            image = rng.choice(_IMAGES).format(
                team=team,
                app=app.rsplit("-", 1)[0],
                major=rng.randint(0, 9),
                minor=rng.randint(0, 40),
                patch=rng.randint(0, 20),
                rev=rng.randint(1, 99),
            )
            image_ids.append(f"{image.split(':')[0]}@sha256:{self.hexid(64)}")
            port = 8080 + c
            resources: JSON = {}
            if not best_effort:
                resources = {
                    "requests": {"cpu": f"{cpu_m}m", "memory": f"{mem // 2**20}Mi"},
                    "limits": {"cpu": f"{cpu_m * 2}m", "memory": f"{mem // 2**20}Mi"},
                }
            mounts: list[JSON] = [
                {
                    "name": "kube-api-access",
                    "readOnly": True,
                    "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                },
            ]
            if c > 0:  # a sidecar: small
                containers.append(
                    {
                        "name": cname,
                        "image": image,
                        "imagePullPolicy": "IfNotPresent",
                        "args": [f"--upstream=127.0.0.1:{8080}"],
                        "ports": [{"containerPort": 15000 + c, "name": "admin", "protocol": "TCP"}],
                        "env": [
                            {
                                "name": "POD_NAME",
                                "valueFrom": {
                                    "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}
                                },
                            }
                        ],
                        "resources": resources,
                        "volumeMounts": mounts,
                        "terminationMessagePath": "/dev/termination-log",
                        "terminationMessagePolicy": "File",
                    }
                )
                continue
            env: list[JSON] = [
                {
                    "name": "POD_NAME",
                    "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}},
                },
                {
                    "name": "NODE_NAME",
                    "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "spec.nodeName"}},
                },
                {"name": "LOG_LEVEL", "value": rng.choice(["info", "warn", "debug"])},
            ]
            for k in range(rng.randint(0, 2)):
                env.append({"name": f"FEATURE_FLAG_{k}", "value": rng.choice(["true", "false"])})
            probe: JSON = {
                "httpGet": {"path": "/healthz", "port": port, "scheme": "HTTP"},
                "initialDelaySeconds": rng.choice([5, 10, 15]),
                "periodSeconds": 10,
                "timeoutSeconds": 1,
                "successThreshold": 1,
                "failureThreshold": 3,
            }
            containers.append(
                {
                    "name": cname,
                    "image": image,
                    "imagePullPolicy": "IfNotPresent",
                    "args": [f"--config=/etc/{app}/config.yaml", f"--port={port}"],
                    "ports": [
                        {"containerPort": port, "name": "http", "protocol": "TCP"},
                        {"containerPort": 9090, "name": "metrics", "protocol": "TCP"},
                    ],
                    "env": env,
                    "resources": resources,
                    "volumeMounts": [
                        {"name": "config", "mountPath": f"/etc/{app}", "readOnly": True},
                        {"name": "data", "mountPath": "/var/lib/data"},
                        *mounts,
                    ],
                    "livenessProbe": probe,
                    "readinessProbe": {**probe, "httpGet": {**probe["httpGet"], "path": "/ready"}},
                    "terminationMessagePath": "/dev/termination-log",
                    "terminationMessagePolicy": "File",
                }
            )
        volumes = [
            {"name": "config", "configMap": {"name": f"{app}-config", "defaultMode": 420}},
            {"name": "data", "emptyDir": {"sizeLimit": "10Gi"}},
            {
                "name": "kube-api-access",
                "projected": {
                    "defaultMode": 420,
                    "sources": [
                        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                        {
                            "configMap": {
                                "name": "kube-root-ca.crt",
                                "items": [{"key": "ca.crt", "path": "ca.crt"}],
                            }
                        },
                        {
                            "downwardAPI": {
                                "items": [
                                    {
                                        "path": "namespace",
                                        "fieldRef": {
                                            "apiVersion": "v1",
                                            "fieldPath": "metadata.namespace",
                                        },
                                    }
                                ]
                            }
                        },
                    ],
                },
            },
        ]
        tolerations: list[JSON] = [
            {
                "key": "node.kubernetes.io/not-ready",
                "operator": "Exists",
                "effect": "NoExecute",
                "tolerationSeconds": 300,
            },
            {
                "key": "node.kubernetes.io/unreachable",
                "operator": "Exists",
                "effect": "NoExecute",
                "tolerationSeconds": 300,
            },
        ]
        if kind == "DaemonSet":
            tolerations = [{"operator": "Exists"}]
        affinity = None
        if kind in ("Deployment", "StatefulSet") and rng.random() < 0.5:
            affinity = {
                "podAntiAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "weight": 100,
                            "podAffinityTerm": {
                                "labelSelector": {"matchLabels": {"app": app}},
                                "topologyKey": "kubernetes.io/hostname",
                            },
                        }
                    ]
                }
            }
        if kind == "DaemonSet":
            priority_class, priority = "system-node-critical", 2000001000
        elif batch:
            priority_class, priority = rng.choice([("batch-low", 100), ("batch-high", 500)])
        else:
            priority_class, priority = rng.choice(
                [("prod-critical", 10000), ("prod", 5000), ("", 0)]
            )
        return Workload(
            kind,
            namespace,
            app,
            replicas,
            qos,
            labels,
            annotations,
            owner,
            containers,
            requests,
            volumes,
            tolerations,
            priority_class,
            priority,
            revocable,
            affinity,
            image_ids,
        )

    def podgroup(
        self,
        namespace: str,
        app: str,
        uid: str,
        replicas: int,
        queue: str,
        preemptable: bool,
        revocable: bool,
    ) -> JSON:
        annotations: JSON = {}
        if preemptable:
            annotations["volcano.sh/preemptable"] = "true"
        if revocable:
            annotations[ZONE_LABEL] = "*"
        if self.rng.random() < 0.3:
            annotations["volcano.sh/jdb-max-unavailable"] = self.rng.choice(["1", "10%", "25%"])
        return {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {
                "name": f"{app}-{uid}",
                "namespace": namespace,
                "uid": self.uid(),
                "resourceVersion": self.next_rv(),
                "creationTimestamp": fmt(T0 - timedelta(minutes=self.rng.randint(5, 600))),
                "annotations": annotations,
                "ownerReferences": [
                    {
                        "apiVersion": "batch.volcano.sh/v1alpha1",
                        "kind": "Job",
                        "name": app,
                        "uid": uid,
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "spec": {
                "minMember": max(1, replicas // 2),
                "queue": queue,
                "minResources": {"cpu": str(replicas), "memory": f"{replicas}Gi"},
            },
            "status": {
                "phase": "Running",
                "running": replicas,
                "conditions": [
                    {
                        "type": "Scheduled",
                        "status": "True",
                        "lastTransitionTime": fmt(T0 - timedelta(minutes=4)),
                        "reason": "tasks in gang are ready to be scheduled",
                        "transitionID": self.uid(),
                    }
                ],
            },
        }

    def queue(self, name: str) -> JSON:
        spec: JSON = {
            "weight": 1 if name == "default" else self.rng.randint(1, 8),
            "reclaimable": True,
        }
        if name.startswith("batch"):
            spec["capability"] = {
                "cpu": str(self.scale.nodes * 20),
                "memory": f"{self.scale.nodes * 80}Gi",
            }
        return {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "Queue",
            "metadata": {
                "name": name,
                "uid": self.uid(),
                "resourceVersion": self.next_rv(),
                "creationTimestamp": fmt(T0 - timedelta(days=30)),
            },
            "spec": spec,
            "status": {"state": "Open"},
        }

    # -- pods ---------------------------------------------------------------------------

    def place(self, wl: Workload) -> int:
        """A node with room for the workload's requests (first fit over random picks)."""
        cpu = sum(r[0] for r in wl.requests)
        mem = sum(r[1] for r in wl.requests)
        if wl.kind == "DaemonSet":
            candidates = self.normal_nodes + self.zone_nodes
            i = candidates[wl.next_ordinal % len(candidates)]
            self.take(i, cpu, mem)
            return i
        pools = [self.normal_nodes]
        if wl.revocable:
            pools = (
                [self.zone_nodes, self.normal_nodes]
                if self.rng.random() < 0.7
                else [self.normal_nodes, self.zone_nodes]
            )
        for pool in pools:
            if not pool:
                continue
            for _ in range(12):
                i = pool[self.rng.randrange(len(pool))]
                free = self.node_free[i]
                if free[0] >= cpu and free[1] >= mem and free[2] > 0:
                    self.take(i, cpu, mem)
                    return i
        return -1  # stays Pending

    def take(self, i: int, cpu: int, mem: int, sign: int = 1) -> None:
        free = self.node_free[i]
        free[0] -= sign * cpu
        free[1] -= sign * mem
        free[2] -= sign

    def new_pod(self, wi: int, pending: bool, created: datetime) -> int:
        wl = self.workloads[wi]
        ordinal = wl.next_ordinal
        if wl.kind == "StatefulSet":
            name = f"{wl.name}-{ordinal}"
        elif wl.kind == "Job":
            name = f"{wl.name}-worker-{ordinal}"
        else:
            name = (
                f"{wl.name}-{self.hexid(10)[:10] if wl.kind == 'Deployment' else ''}{self.hexid(5)}"
            )
        node = -1 if pending else self.place(wl)
        wl.next_ordinal += 1
        started = created + timedelta(seconds=self.rng.randint(2, 30))
        state = PodState(
            wi,
            name,
            self.uid(),
            node,
            self.next_ip() if node >= 0 else "",
            fmt(created),
            fmt(started),
            [0] * len(wl.containers),
        )
        self.pods.append(state)
        index = len(self.pods) - 1
        if node < 0:
            self.pending.add(index)
        return index

    def pod_json(self, index: int, *, deleting: datetime | None = None) -> JSON:
        st = self.pods[index]
        assert st is not None
        wl = self.workloads[st.workload]
        rng = self.rng
        st.rv += 1
        running = st.node >= 0
        meta: JSON = {
            "name": st.name,
            "namespace": wl.namespace,
            "uid": st.uid,
            "resourceVersion": self.next_rv(),
            "creationTimestamp": st.created,
            "labels": wl.labels,
            "annotations": {
                **wl.annotations,
                "cni.projectcalico.org/podIP": f"{st.ip}/32" if st.ip else "",
                "cni.projectcalico.org/podIPs": f"{st.ip}/32" if st.ip else "",
            }
            if running
            else wl.annotations,
            "ownerReferences": [wl.owner],
            "managedFields": self.managed_fields(wl, st, running),
        }
        if wl.kind != "StatefulSet":
            meta["generateName"] = st.name[:-5] if wl.kind != "Job" else f"{wl.name}-worker-"
        if deleting is not None:
            meta["deletionTimestamp"] = fmt(deleting)
            meta["deletionGracePeriodSeconds"] = 30
        spec: JSON = {
            "containers": wl.containers,
            "volumes": wl.volumes,
            "restartPolicy": "OnFailure" if wl.kind == "Job" else "Always",
            "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst",
            "serviceAccountName": wl.name,
            "serviceAccount": wl.name,
            "securityContext": {"fsGroup": 10001},
            "schedulerName": "volcano" if wl.kind in ("Job", "Deployment") else "default-scheduler",
            "tolerations": wl.tolerations,
            "priority": wl.priority,
            "enableServiceLinks": False,
            "preemptionPolicy": "PreemptLowerPriority",
        }
        if wl.priority_class:
            spec["priorityClassName"] = wl.priority_class
        if wl.affinity is not None:
            spec["affinity"] = wl.affinity
        if running:
            spec["nodeName"] = self.node_names[st.node]
        qos_class = "BestEffort" if any(r == (0, 0) for r in wl.requests) else "Burstable"
        if running:
            ready_at = st.started
            status: JSON = {
                "phase": "Running",
                "conditions": [
                    {
                        "type": "Initialized",
                        "status": "True",
                        "lastProbeTime": None,
                        "lastTransitionTime": st.created,
                    },
                    {
                        "type": "Ready",
                        "status": "True",
                        "lastProbeTime": None,
                        "lastTransitionTime": ready_at,
                    },
                    {
                        "type": "ContainersReady",
                        "status": "True",
                        "lastProbeTime": None,
                        "lastTransitionTime": ready_at,
                    },
                    {
                        "type": "PodScheduled",
                        "status": "True",
                        "lastProbeTime": None,
                        "lastTransitionTime": st.created,
                    },
                ],
                "hostIP": f"10.{st.node // 250}.{st.node % 250}.10",
                "podIP": st.ip,
                "podIPs": [{"ip": st.ip}],
                "startTime": st.created,
                "qosClass": qos_class,
                "containerStatuses": [
                    self.container_status(wl, st, c) for c in range(len(wl.containers))
                ],
            }
            status["hostIPs"] = [{"ip": status["hostIP"]}]
        else:
            status = {
                "phase": "Pending",
                "conditions": [
                    {
                        "type": "PodScheduled",
                        "status": "False",
                        "lastProbeTime": None,
                        "lastTransitionTime": st.created,
                        "reason": "Unschedulable",
                        "message": f"0/{self.scale.nodes} nodes are unavailable: "
                        f"{rng.randint(1, 9)} Insufficient cpu.",
                    }
                ],
                "qosClass": qos_class,
            }
        return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}

    def container_status(self, wl: Workload, st: PodState, c: int) -> JSON:
        container = wl.containers[c]
        cs: JSON = {
            "name": container["name"],
            "image": container["image"],
            "imageID": wl.image_ids[c],
            "containerID": f"containerd://{self.hexid(64)}",
            "ready": True,
            "started": True,
            "restartCount": st.restarts[c],
            "state": {"running": {"startedAt": st.started}},
            "lastState": {},
        }
        if st.restarts[c]:
            reason = "OOMKilled" if st.oom and c == 0 else "Error"
            cs["lastState"] = {
                "terminated": {
                    "exitCode": 137 if reason == "OOMKilled" else 1,
                    "reason": reason,
                    "startedAt": st.created,
                    "finishedAt": st.started,
                    "containerID": f"containerd://{self.hexid(64)}",
                }
            }
        return cs

    def managed_fields(self, wl: Workload, st: PodState, running: bool) -> list[JSON]:
        """The bulk ``managedFields`` adds to a real pod (fieldsV1 trees)."""
        containers: JSON = {
            f'k:{{"name":"{c["name"]}"}}': {
                ".": {},
                "f:image": {},
                "f:name": {},
                "f:resources": {},
            }
            for c in wl.containers
        }
        entries: list[JSON] = [
            {
                "manager": "kube-controller-manager"
                if wl.kind != "Job"
                else "vc-controller-manager",
                "operation": "Update",
                "apiVersion": "v1",
                "time": st.created,
                "fieldsType": "FieldsV1",
                "fieldsV1": {
                    "f:metadata": {
                        "f:annotations": {},
                        "f:generateName": {},
                        "f:labels": {},
                        "f:ownerReferences": {".": {}, f'k:{{"uid":"{wl.owner["uid"]}"}}': {}},
                    },
                    "f:spec": {
                        "f:containers": containers,
                        "f:restartPolicy": {},
                        "f:schedulerName": {},
                        "f:volumes": {},
                    },
                },
            }
        ]
        if running:
            entries.append(
                {
                    "manager": "kubelet",
                    "operation": "Update",
                    "apiVersion": "v1",
                    "time": st.started,
                    "fieldsType": "FieldsV1",
                    "subresource": "status",
                    "fieldsV1": {
                        "f:status": {
                            "f:conditions": {},
                            "f:containerStatuses": {},
                            "f:phase": {},
                            "f:podIP": {},
                            "f:startTime": {},
                        }
                    },
                }
            )
        return entries

    # -- metrics ------------------------------------------------------------------------

    def node_metrics(self, i: int, now: datetime) -> JSON:
        alloc = self.nodes[i]["status"]["allocatable"]
        cpu_m = int(alloc["cpu"][:-1])
        mem_ki = int(alloc["memory"][:-2])
        hot = self.rng.random() < 0.03
        frac_cpu = self.rng.uniform(0.75, 0.98) if hot else self.rng.uniform(0.1, 0.6)
        frac_mem = self.rng.uniform(0.75, 0.97) if hot else self.rng.uniform(0.2, 0.65)
        return {
            "apiVersion": "metrics.k8s.io/v1beta1",
            "kind": "NodeMetrics",
            "metadata": {
                "name": self.node_names[i],
                "creationTimestamp": fmt(now),
                "labels": self.nodes[i]["metadata"]["labels"],
            },
            "timestamp": fmt(now - timedelta(seconds=self.rng.randint(1, 15))),
            "window": "20.042s",
            "usage": {
                "cpu": f"{int(cpu_m * frac_cpu * 1_000_000)}n",
                "memory": f"{int(mem_ki * frac_mem)}Ki",
            },
        }

    def pod_metrics(self, index: int, now: datetime) -> JSON:
        st = self.pods[index]
        assert st is not None
        wl = self.workloads[st.workload]
        containers = []
        for c, (cpu_m, mem) in enumerate(wl.requests):
            base_cpu = cpu_m or 200
            base_mem = mem or 256 * 2**20
            containers.append(
                {
                    "name": wl.containers[c]["name"],
                    "usage": {
                        "cpu": f"{int(base_cpu * self.rng.uniform(0.05, 1.3) * 1_000_000)}n",
                        "memory": f"{int(base_mem * self.rng.uniform(0.2, 1.05)) // 1024}Ki",
                    },
                }
            )
        return {
            "apiVersion": "metrics.k8s.io/v1beta1",
            "kind": "PodMetrics",
            "metadata": {
                "name": st.name,
                "namespace": wl.namespace,
                "creationTimestamp": fmt(now),
                "labels": wl.labels,
            },
            "timestamp": fmt(now - timedelta(seconds=self.rng.randint(1, 15))),
            "window": "15.01s",
            "containers": containers,
        }

    # -- the recording ------------------------------------------------------------------

    def events(self) -> Iterator[tuple[datetime, str, JSON]]:
        """``(at, type, data)`` in recording order."""
        s = self.scale
        rng = self.rng
        self.build_nodes()
        self.build_workloads()

        # choose which pods start Pending: spread over Jobs and Deployments
        total = sum(w.replicas for w in self.workloads)
        eligible = [i for i, w in enumerate(self.workloads) if w.kind in ("Job", "Deployment")]
        slots = [(wi, k) for wi in eligible for k in range(self.workloads[wi].replicas)]
        pending_slots = set(rng.sample(slots, min(s.pending, len(slots))))

        t = T0
        per_second = 5_000  # the initial list is stamped over a few seconds
        emitted = 0

        def tick() -> datetime:
            nonlocal emitted
            emitted += 1
            return T0 + timedelta(seconds=emitted // per_second)

        for q in _QUEUES:
            yield (
                tick(),
                "k8s.watch",
                {"resource": "queues", "event": "ADDED", "object": self.queue(q)},
            )
        for node in self.nodes:
            yield tick(), "k8s.watch", {"resource": "nodes", "event": "ADDED", "object": node}
        for pg in self.podgroups:
            yield tick(), "k8s.watch", {"resource": "podgroups", "event": "ADDED", "object": pg}
        for wi, wl in enumerate(self.workloads):
            for k in range(wl.replicas):
                at = tick()
                created = at - timedelta(minutes=rng.randint(1, 60 * 24 * 7))
                index = self.new_pod(wi, (wi, k) in pending_slots, created)
                yield (
                    at,
                    "k8s.watch",
                    {"resource": "pods", "event": "ADDED", "object": self.pod_json(index)},
                )
        assert total == len(self.pods)
        t = tick()

        # churn over ten virtual minutes
        live = [i for i in range(len(self.pods)) if i not in self.pending]
        restarts = rng.sample(live, int(len(live) * s.restart_fraction))
        recreate = set(rng.sample(live, int(len(live) * s.recreate_fraction)))
        actions: list[tuple[str, int]] = [("restart", i) for i in restarts if i not in recreate]
        actions += [("recreate", i) for i in sorted(recreate)]
        actions += [("heartbeat", i) for i in range(len(self.nodes))]
        rng.shuffle(actions)
        rounds = max(s.node_metric_rounds, s.pod_metric_rounds, 1)
        span = 600
        # metric rounds at even intervals, the churn between them
        per_round = max(1, len(actions) // rounds)
        start = t + timedelta(seconds=5)
        for r in range(rounds):
            at = start + timedelta(seconds=r * span // rounds)
            if r < s.node_metric_rounds:
                for i in range(len(self.nodes)):
                    if self.nodes[i]["status"]["conditions"][-1]["status"] == "True":
                        yield at, "metrics.node", self.node_metrics(i, at)
            if r < s.pod_metric_rounds:
                for i, st in enumerate(self.pods):
                    if st is not None and st.node >= 0:
                        yield at, "metrics.pod", self.pod_metrics(i, at)
            chunk = actions[r * per_round : (r + 1) * per_round if r < rounds - 1 else None]
            step = (span // rounds - 4) / max(1, len(chunk))
            batch: list[tuple[datetime, str, JSON]] = []
            for k, (what, i) in enumerate(chunk):
                batch.extend(self.churn(what, i, at + timedelta(seconds=int(1 + k * step))))
            batch.sort(key=lambda item: item[0])  # stable: one pod's events keep their order
            yield from batch
        self.now = start + timedelta(seconds=span)

    def churn(self, what: str, i: int, when: datetime) -> Iterator[tuple[datetime, str, JSON]]:
        if what == "heartbeat":
            node = self.nodes[i]
            not_ready = node["status"]["conditions"][-1]["status"] != "True"
            node = {
                **node,
                "metadata": {**node["metadata"], "resourceVersion": self.next_rv()},
                "status": {**node["status"], "conditions": self.node_conditions(not_ready, when)},
            }
            yield when, "k8s.watch", {"resource": "nodes", "event": "MODIFIED", "object": node}
            return
        st = self.pods[i]
        assert st is not None
        if what == "restart":
            c = self.rng.randrange(len(st.restarts))
            st.restarts[c] += 1
            st.oom = c == 0 and self.rng.random() < 0.3
            st.started = fmt(when)
            yield (
                when,
                "k8s.watch",
                {"resource": "pods", "event": "MODIFIED", "object": self.pod_json(i)},
            )
            return
        # recreate: graceful delete (MODIFIED with deletionTimestamp), DELETED, then a new pod
        grace_end = when + timedelta(seconds=30)
        yield (
            when,
            "k8s.watch",
            {
                "resource": "pods",
                "event": "MODIFIED",
                "object": self.pod_json(i, deleting=grace_end),
            },
        )
        final = self.pod_json(i, deleting=grace_end)
        yield (
            when + timedelta(seconds=1),
            "k8s.watch",
            {"resource": "pods", "event": "DELETED", "object": final},
        )
        wl = self.workloads[st.workload]
        self.take(st.node, sum(r[0] for r in wl.requests), sum(r[1] for r in wl.requests), -1)
        self.pods[i] = None
        new = self.new_pod(st.workload, False, when + timedelta(seconds=2))
        yield (
            when + timedelta(seconds=2),
            "k8s.watch",
            {"resource": "pods", "event": "ADDED", "object": self.pod_json(new)},
        )

    def write(self, out: IO[bytes]) -> Manifest:
        ids = self.scale.ids
        buffer: list[bytes] = []
        first = last = ""
        for at, type_, data in self.events():
            at_text = fmt(at)
            record: JSON = {"at": at_text, "type": type_, "data": data}
            if ids:
                record["id"] = self._content_id(type_, at, data, None)
            line = orjson.dumps(record, option=_SORTED)
            first = first or at_text
            last = at_text
            self.counts[type_] += 1
            if type_ == "k8s.watch":
                self.watch_counts[f"{data['resource']}.{data['event']}"] += 1
                if data["resource"] == "pods":
                    self.pod_bytes += len(line)
                    self.pod_lines += 1
            self.lines += 1
            self.bytes += len(line) + 1
            buffer.append(line)
            if len(buffer) >= 1_000:
                out.write(b"\n".join(buffer) + b"\n")
                buffer.clear()
        if buffer:
            out.write(b"\n".join(buffer) + b"\n")
        alive = [p for p in self.pods if p is not None]
        return Manifest(
            scale=asdict(self.scale),
            path="",
            source_hash=source_hash(),
            lines=self.lines,
            bytes=self.bytes,
            by_type=dict(sorted(self.counts.items())),
            by_watch=dict(sorted(self.watch_counts.items())),
            pod_bytes_mean=round(self.pod_bytes / max(1, self.pod_lines), 1),
            pods_final=len(alive),
            pending_final=sum(1 for p in alive if p.node < 0),
            zone_nodes=dict(sorted(Counter(z for z in self.node_zone if z).items())),
            start=first,
            end=last,
        )


def source_hash() -> str:
    """A hash of this module's source: a cached recording is reused only if it matches."""
    return hashlib.blake2b(Path(__file__).read_bytes(), digest_size=8).hexdigest()


def generate(scale: Scale, dest: Path | IO[bytes]) -> Manifest:
    """Write the recording for ``scale`` to a path or binary stream."""
    gen = Generator(scale)
    if isinstance(dest, Path):
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = dest.with_suffix(".tmp")
        with tmp.open("wb") as out:
            manifest = gen.write(out)
        tmp.replace(dest)
        manifest.path = str(dest)
        return manifest
    return gen.write(dest)


def ensure_recording(scale: Scale, out_dir: Path = OUT_DIR, *, log: bool = True) -> Manifest:
    """The recording for ``scale`` in ``out_dir``: reused when current, else generated."""
    path = out_dir / f"{scale.name}.jsonl"
    meta = path.with_suffix(".meta.json")
    if path.exists() and meta.exists():
        cached = orjson.loads(meta.read_bytes())
        if cached.get("source_hash") == source_hash() and cached.get("scale") == asdict(scale):
            # The meta may have been written through another checkout's symlink to
            # this directory: the path is where the recording is found now.
            return Manifest(**{**cached, "path": str(path)})
    if log:
        print(f"generating {path.name} ...", file=sys.stderr, flush=True)
    manifest = generate(scale, path)
    meta.write_bytes(orjson.dumps(asdict(manifest), option=orjson.OPT_INDENT_2 | _SORTED))
    return manifest


def scale_from_args(args: argparse.Namespace) -> Scale:
    scale = SCALES[args.scale]
    changes: JSON = {}
    for key in ("nodes", "pods", "pending", "seed"):
        value = getattr(args, key, None)
        if value is not None:
            changes[key] = value
    if getattr(args, "ids", False):
        changes["ids"] = True
    return replace(scale, **changes)


def add_scale_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--scale",
        choices=sorted(SCALES),
        default="full",
        help="preset size (full: 5,000 nodes / 150,000 pods)",
    )
    parser.add_argument("--nodes", type=int, help="override the preset's node count")
    parser.add_argument("--pods", type=int, help="override the preset's pod count")
    parser.add_argument("--pending", type=int, help="pods left Pending without nodeName")
    parser.add_argument("--seed", type=int, help="the random seed")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    add_scale_arguments(parser)
    parser.add_argument("--ids", action="store_true", help="write an id on each line")
    parser.add_argument("--out", type=Path, default=OUT_DIR, help="output directory")
    args = parser.parse_args(argv)
    manifest = ensure_recording(scale_from_args(args), args.out)
    print(orjson.dumps(asdict(manifest), option=orjson.OPT_INDENT_2).decode())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
