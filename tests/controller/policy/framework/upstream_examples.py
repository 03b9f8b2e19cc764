"""Forty-eight upstream Volcano scheduler configuration examples, described as data.

Each example was read from volcano-sh/volcano (the path and the commit the index returned
are its provenance) and is described here, not copied: the wrapper it came in, its
``actions``, each tier's plugin entries (name, enable flags, arguments as given) and any
``configurations``. :func:`render` builds the YAML text a user would paste from that
description. ``quirk`` names a oddity of the original text that data alone cannot carry
(a second ``tiers:`` key, a bare ``...`` line); ``refuses`` is the key the loader's one-line
error must name when the example cannot be run as written (None: it loads).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

#: how the original wraps the scheduler configuration
PLAIN = "plain"
CONFIGMAP = "configmap"
#: only the ``data:`` part of a ConfigMap (no kind, apiVersion or metadata)
DATA_ONLY = "data-only"
#: the original gives ``tiers:`` twice, the first one empty
DUPLICATE_TIERS = "duplicate-tiers"
#: the original has a bare ``...`` line (YAML's document end) inside ``configurations``
ELLIPSIS = "ellipsis-in-configurations"

CONF = "installer/helm/chart/volcano/config/"
GUIDE = "docs/user-guide/"


def p(name: str, args: dict[str, Any] | None = None, /, **options: Any) -> dict[str, Any]:
    """A plugin entry: its name, enable flags or other options as given, then arguments."""
    entry: dict[str, Any] = {"name": name, **options}
    if args is not None:
        entry["arguments"] = args
    return entry


@dataclass(frozen=True)
class Example:
    """One upstream example, described."""

    id: str
    path: str
    commit: str
    tiers: list[list[dict[str, Any]]]
    actions: str | list[Any] | None = None
    configurations: list[dict[str, Any]] | None = None
    wrapper: str = PLAIN
    #: ConfigMap metadata as given (name, namespace)
    metadata: dict[str, str] = field(
        default_factory=lambda: {
            "name": "volcano-scheduler-configmap",
            "namespace": "volcano-system",
        }
    )
    quirk: str | None = None
    refuses: str | None = None

    def scheduler(self) -> dict[str, Any]:
        """The scheduler configuration as a mapping (what a YAML parser reads from it)."""
        out: dict[str, Any] = {}
        if self.actions is not None:
            out["actions"] = self.actions
        out["tiers"] = [{"plugins": plugins} for plugins in self.tiers]
        if self.configurations is not None:
            out["configurations"] = self.configurations
        return out


def render(example: Example) -> str:
    """The YAML text of ``example`` as a user would paste it."""
    text = yaml.safe_dump(example.scheduler(), sort_keys=False)
    if example.quirk == DUPLICATE_TIERS:
        text = text.replace("tiers:\n", "tiers:\ntiers:\n", 1)
    elif example.quirk == ELLIPSIS:
        text = text.replace("configurations:\n", "configurations:\n...\n", 1)
    if example.wrapper == PLAIN:
        return text
    data = {"volcano-scheduler.conf": text}
    if example.wrapper == DATA_ONLY:
        return yaml.safe_dump({"data": data}, sort_keys=False)
    wrapped = {"kind": "ConfigMap", "apiVersion": "v1", "metadata": example.metadata, "data": data}
    return yaml.safe_dump(wrapped, sort_keys=False)


NO_PREEMPTABLE = {"enablePreemptable": False}
BASE_FIRST = [p("priority"), p("gang"), p("conformance")]
KUBE_BATCH_SECOND = [p("drf"), p("predicates"), p("proportion"), p("nodeorder")]
GPU_SECOND = [p("proportion"), p("nodeorder"), p("binpack")]


def _gpu_guide(id_: str, path: str, commit: str, args: dict[str, Any]) -> Example:
    """The GPU guides share one layout and differ in the predicates arguments."""
    return Example(
        id_,
        GUIDE + path,
        commit,
        [BASE_FIRST, [p("drf"), p("predicates", args), *GPU_SECOND]],
        "enqueue, allocate, backfill",
        wrapper=CONFIGMAP,
    )


OVERCOMMIT_DESIGN = ("docs/design/overcommit-plugin.md", "9f1c3c1b7dc29970b04a4b8e3c896e06cc24ae5b")
EAB = "enqueue, allocate, backfill"


def _overcommit(id_: str, **dedented: Any) -> Example:
    """The design's examples indent their factors at the entry's level, not under arguments."""
    entry = {"name": "overcommit", "arguments": None, **dedented}
    first = next(iter(dedented), None)
    refuses = f"tiers[0].plugins[0].{first}" if first else None
    return Example(id_, *OVERCOMMIT_DESIGN, [[entry]], EAB, refuses=refuses)


EXAMPLES: list[Example] = [
    Example(
        "helm-volcano-scheduler",
        CONF + "volcano-scheduler.conf",
        "178acf02f7b674f2a809349bb802f973a35d3f10",
        [
            [p("priority"), p("gang", **NO_PREEMPTABLE), p("conformance")],
            [
                p("overcommit"),
                p("drf", **NO_PREEMPTABLE),
                p("predicates"),
                p("proportion"),
                p("nodeorder"),
                p("binpack"),
                p("reservation"),
            ],
        ],
        "enqueue, reserve, allocate, backfill",
    ),
    Example(
        "helm-volcano-scheduler-ci",
        CONF + "volcano-scheduler-ci.conf",
        "23039b18d62e393f716ae30458b7e6969e026ee3",
        [BASE_FIRST, [p("drf"), p("predicates"), p("proportion"), p("nodeorder"), p("binpack")]],
        [
            {"name": "enqueue", "arguments": {"enqueue-action-idleres-mul": 1.2}},
            {"name": "allocate"},
            {"name": "backfill"},
            {"name": "reclaim"},
            {"name": "preempt"},
        ],
        refuses="actions",
    ),
    Example(
        "helm-agent-scheduler",
        CONF + "agent-scheduler.conf",
        "d77a1e8e215622384f86a3f7573fa1f754ac46f4",
        [
            [p("priority"), p("gang", **NO_PREEMPTABLE), p("conformance")],
            [
                p("overcommit"),
                p("drf", **NO_PREEMPTABLE),
                p("predicates"),
                p("proportion"),
                p("nodeorder"),
                p("binpack"),
            ],
        ],
        EAB,
    ),
    Example(
        "helm-kube-batch-ci",
        CONF + "kube-batch-ci.conf",
        "d5e3beffcb1d6d2f1224b57ee76033f8c9bfc5e9",
        [BASE_FIRST, KUBE_BATCH_SECOND],
        [
            {"name": "enqueue"},
            {"name": "reclaim"},
            {
                "name": "reserve",
                "arguments": {"reservedNodePercent": 50, "starvingJobTimeThreshold": 600},
            },
            {"name": "allocate"},
            {"name": "backfill"},
            {"name": "preempt"},
        ],
        refuses="actions",
    ),
    Example(
        "helm-kube-batch",
        CONF + "kube-batch.conf",
        "d5e3beffcb1d6d2f1224b57ee76033f8c9bfc5e9",
        [BASE_FIRST, KUBE_BATCH_SECOND],
        [{"name": "enqueue"}, {"name": "allocate"}, {"name": "backfill"}],
        refuses="actions",
    ),
    Example(
        "helm-capacity-card-ci",
        CONF + "volcano-scheduler-capacity-card-ci.conf",
        "61a5f00e0237affc65287750f5e1b5a4cea0b00d",
        [
            [p("priority"), p("gang", **NO_PREEMPTABLE), p("conformance"), p("sla")],
            [
                p("overcommit"),
                p("drf", **NO_PREEMPTABLE),
                p("predicates", {"predicate.DynamicResourceAllocationEnable": True}),
                p("capacity-card", {"cardUnlimitedCpuMemory": True}),
                p("nodeorder"),
                p("binpack"),
                p("network-topology-aware"),
            ],
        ],
        "enqueue, allocate, backfill, reclaim, preempt",
    ),
    Example(
        "helm-namespacequeue-ci",
        CONF + "volcano-scheduler-namespacequeue-ci.conf",
        "36823bf10a8cba99f0663b37aae1798bfa4354f5",
        [
            [p("priority"), p("gang", **NO_PREEMPTABLE), p("conformance"), p("sla")],
            [
                p("overcommit"),
                p("drf", **NO_PREEMPTABLE),
                p("capacity", enableHierarchy=True),
                p("predicates", {"predicate.DynamicResourceAllocationEnable": True}),
                p("nodeorder"),
                p("binpack"),
                p("network-topology-aware"),
            ],
        ],
        "enqueue, allocate, backfill, reclaim, preempt",
    ),
    Example(
        "helm-namespacequeue",
        CONF + "volcano-scheduler-namespacequeue.conf",
        "07309f69c4faa2f4b0b3a03298b046e53f66110d",
        [
            [p("priority"), p("gang", **NO_PREEMPTABLE), p("conformance")],
            [
                p("overcommit"),
                p("drf", **NO_PREEMPTABLE),
                p("capacity", enableHierarchy=True),
                p("predicates"),
                p("nodeorder"),
                p("binpack"),
            ],
        ],
        EAB,
    ),
    Example(
        "deployment-kube-batch",
        "deployment/volcano/config/kube-batch.conf",
        "79ba98949c0ff05d406cc1c6c521531fb3d49848",
        [BASE_FIRST, KUBE_BATCH_SECOND],
        "reclaim, allocate, backfill, preempt",
    ),
    Example(
        "example-kube-batch-conf",
        "example/kube-batch-conf.yaml",
        "8c275bbe4b465ae025238ca582687385a5fba203",
        [BASE_FIRST, KUBE_BATCH_SECOND],
        "reclaim, allocate, backfill, preempt",
    ),
    Example(
        "guide-configure-scheduler",
        GUIDE + "how_to_configure_scheduler.md",
        "3c9815b1ace467620b49813f780ab24760d80495",
        [
            BASE_FIRST,
            [
                p("overcommit"),
                p("drf"),
                p("predicates"),
                p("proportion"),
                p("nodeorder"),
                p("binpack"),
            ],
        ],
        EAB,
    ),
    Example(
        "guide-capacity",
        GUIDE + "how_to_use_capacity_plugin.md",
        "00e8d36ae1ec1c79305e2f83b70efd06ff061c3a",
        [
            [p("priority"), p("gang", **NO_PREEMPTABLE), p("conformance")],
            [
                p("drf", **NO_PREEMPTABLE),
                p("predicates"),
                p("capacity"),
                p("nodeorder"),
                p("binpack"),
            ],
        ],
        "enqueue, allocate, backfill, reclaim",
        wrapper=CONFIGMAP,
    ),
    Example(
        "guide-fairshare",
        GUIDE + "how_to_use_fairshare_plugin.md",
        "2ab4cb9a30a729637ab95f03070217f52f502267",
        [
            [
                *BASE_FIRST,
                p(
                    "fairshare",
                    {
                        "fairshare.targetQueues": "gpu-queue",
                        "fairshare.resourceKey": "nvidia.com/gpu",
                        "fairshare.halfLifeMinutes": "240",
                        "fairshare.enableEnqueueGate": "false",
                        "fairshare.persistState": "true",
                    },
                ),
            ],
            [p("drf"), p("predicates"), p("nodeorder")],
        ],
        EAB,
        wrapper=CONFIGMAP,
    ),
    Example(
        "guide-gangpreempt-gangreclaim",
        GUIDE + "how_to_use_gangpreempt_and_gangreclaim.md",
        "4c039b20d73a175da60c522555131ccc5c572aaa",
        [
            [
                p("priority"),
                p("gang", **NO_PREEMPTABLE),
                p("conformance"),
                p("sla"),
                p("capacity", enableHierarchy=False),
            ],
            [p("predicates")],
        ],
        "allocate, backfill, gangreclaim, gangpreempt",
        wrapper=CONFIGMAP,
    ),
    Example(
        "guide-nodegroup-strict",
        GUIDE + "how_to_use_nodegroup_plugin.md",
        "271f506efb355f234ae5e6156a19c36435d61b75",
        [
            BASE_FIRST,
            [p("drf"), p("predicates"), p("proportion"), p("nodegroup", {"strict": False})],
        ],
        "allocate, backfill, preempt, reclaim",
    ),
    Example(
        "guide-nodegroup-hierarchy",
        GUIDE + "how_to_use_nodegroup_plugin.md",
        "271f506efb355f234ae5e6156a19c36435d61b75",
        [
            BASE_FIRST,
            [p("drf"), p("predicates"), p("proportion"), p("nodegroup", enableHierarchy=True)],
        ],
        "allocate, backfill, preempt, reclaim",
    ),
    Example(
        "guide-numa-aware",
        GUIDE + "how_to_use_numa_aware.md",
        "3a1f780820d24c8bec252bcd5ccfae5628e08c24",
        [
            BASE_FIRST,
            [
                p("drf"),
                p("predicates"),
                p("proportion"),
                p("nodeorder"),
                p("binpack"),
                p("numa-aware", {"weight": 10}),
            ],
        ],
        EAB,
        wrapper=CONFIGMAP,
    ),
    Example(
        "guide-task-topology",
        GUIDE + "how_to_use_task_topology_plugin.md",
        "de2f649d91ba37bae8c767eaf4a4450a1dba485e",
        [
            BASE_FIRST,
            [
                p("drf"),
                p("predicates"),
                p("task-topology", {"task-topology.weight": 10}),
                p("proportion"),
                p("nodeorder"),
                p("binpack"),
            ],
        ],
        EAB,
        wrapper=CONFIGMAP,
    ),
    Example(
        "guide-extender",
        GUIDE + "how_to_use_extender.md",
        "c1e8a8d02089593acb465d735fcac1dc01908a45",
        [
            BASE_FIRST,
            [
                p("drf"),
                p("predicates"),
                p(
                    "extender",
                    {
                        "extender.urlPrefix": "http://127.0.0.1:8713",
                        "extender.httpTimeout": "100ms",
                        "extender.onSessionOpenVerb": "onSessionOpen",
                        "extender.onSessionCloseVerb": "onSessionClose",
                        "extender.predicateVerb": "predicate",
                        "extender.prioritizeVerb": "prioritize",
                        "extender.preemptableVerb": "preemptable",
                        "extender.reclaimableVerb": "reclaimable",
                        "extender.queueOverusedVerb": "queueOverused",
                        "extender.jobEnqueueableVerb": "jobEnqueueable",
                        "extender.ignorable": True,
                    },
                ),
            ],
        ],
        "reclaim, allocate, backfill, preempt",
        wrapper=CONFIGMAP,
    ),
    Example(
        "guide-resource-strategy-fit",
        GUIDE + "how_to_use_resource_strategy_fit_plugin.md",
        "ecd2beef2c3238c9c6262bfdcffe6915a21a3bb5",
        [
            BASE_FIRST,
            [
                p("drf"),
                p("predicates"),
                p(
                    "resource-strategy-fit",
                    {
                        "resourceStrategyFitWeight": 10,
                        "resources": {
                            "cpu": {"type": "LeastAllocated", "weight": 1},
                            "memory": {"type": "LeastAllocated", "weight": 1},
                            "nvidia.com/gpu": {"type": "MostAllocated", "weight": 2},
                        },
                    },
                ),
            ],
        ],
        "reclaim, allocate, backfill, preempt",
        wrapper=CONFIGMAP,
    ),
    Example(
        "guide-network-topology-aware-plugin",
        GUIDE + "how_to_use_network_topology_aware_plugin.md",
        "073e86ae6db70faac956476ed4a0787097a38780",
        [
            [
                p(
                    "network-topology-aware",
                    {
                        "weight": 20,
                        "binpack.cpu": 1,
                        "binpack.memory": 2,
                        "binpack.resources": "nvidia.com/gpu",
                        "binpack.resources.nvidia.com/gpu": 10,
                    },
                )
            ]
        ],
        "allocate, backfill",
        wrapper=CONFIGMAP,
        metadata={"name": "volcano-scheduler-config"},
    ),
    Example(
        "guide-network-topology-aware-scheduling",
        GUIDE + "how_to_use_network_topology_aware_scheduling.md",
        "9f697d818ae8dc9eeb0a6d801058e141431aecdb",
        [
            BASE_FIRST,
            [
                p("drf"),
                p("predicates"),
                p("proportion"),
                p("nodeorder"),
                p("binpack"),
                p(
                    "network-topology-aware",
                    {
                        "weight": 10,
                        "hypernode.binpack.cpu": 5,
                        "hypernode.binpack.memory": 1,
                        "hypernode.binpack.resources": "nvidia.com/gpu, example.com/foo",
                        "hypernode.binpack.resources.nvidia.com/gpu": 2,
                        "hypernode.binpack.resources.example.com/foo": 3,
                    },
                ),
            ],
        ],
        EAB,
        wrapper=CONFIGMAP,
    ),
    _gpu_guide(
        "guide-vgpu",
        "how_to_use_vgpu.md",
        "0d3fd2b3a22a32b0fee75e6d816f3545f3426499",
        {"predicate.VGPUEnable": True},
    ),
    Example(
        "guide-volcano-vgpu",
        GUIDE + "how_to_use_volcano_vgpu.md",
        "00a7133613353630be232c15d9ed078d27b7a20a",
        [
            [
                p("predicates"),
                p(
                    "deviceshare",
                    {
                        "deviceshare.VGPUEnable": True,
                        "deviceshare.SchedulePolicy": "binpack",
                        "deviceshare.VGPUPodGroupDeviceSpread": True,
                    },
                ),
            ]
        ],
        EAB,
        wrapper=CONFIGMAP,
    ),
    _gpu_guide(
        "guide-4pd-vgpu",
        "how_to_use_4pd_vgpu.md",
        "55381c8b870a54d88f499f9f5806d417e5dd8b8b",
        {"predicate.4PDVGPUEnable": True},
    ),
    Example(
        "guide-enable-dra",
        GUIDE + "how_to_enable_dra.md",
        "03972517b9d801866f41afac7b6b7c8da895844b",
        [
            [p("priority"), p("gang")],
            [
                p("drf"),
                p("predicates", {"predicate.DynamicResourceAllocationEnable": True}),
                *GPU_SECOND,
            ],
        ],
        EAB,
    ),
    Example(
        "guide-dra-quota",
        GUIDE + "how_to_use_dra_quota.md",
        "49a424476e29bcb9cba885eff4be0f08b6d4b959",
        [BASE_FIRST, [p("drf"), p("predicates"), p("capacity"), p("nodeorder")]],
        "enqueue, allocate, backfill, reclaim",
        wrapper=CONFIGMAP,
    ),
    Example(
        "guide-dynamicresources",
        GUIDE + "how_to_use_dynamicresources_plugin.md",
        "d57bdebb166217628d673bd292000ccccd153c54",
        [
            [
                p("dynamicresources"),
                p("priority"),
                p("gang", **NO_PREEMPTABLE),
                p("conformance"),
                p("sla"),
            ],
            [
                p("overcommit"),
                p("drf", **NO_PREEMPTABLE),
                p("predicates"),
                *GPU_SECOND,
            ],
        ],
        "enqueue, allocate, backfill, reclaim, preempt",
        wrapper=CONFIGMAP,
        quirk=DUPLICATE_TIERS,
    ),
    Example(
        "guide-cdp",
        GUIDE + "how_to_use_cdp_plugin.md",
        "c0b7bad4a4ed9dd2ad9e97eacd6f7834ff0b9c7f",
        [
            [*BASE_FIRST, p("cdp")],
            [
                p("drf"),
                p("predicates"),
                p("task-topology", {"task-topology.weight": 10}),
                *GPU_SECOND,
            ],
        ],
        "enqueue, allocate, preempt, backfill",
        wrapper=CONFIGMAP,
    ),
    Example(
        "guide-crossquota",
        GUIDE + "how_to_use_crossquota_plugin.md",
        "1064af00fa5109cb6e6711791a2600cd0c9e7370",
        [
            BASE_FIRST,
            [
                p("drf"),
                p("predicates"),
                p(
                    "crossquota",
                    {
                        "gpu-resource-names": "nvidia.com/gpu,amd.com/gpu",
                        "quota-resources": "cpu,memory",
                        "quota.cpu": "32",
                        "quota.memory": "64Gi",
                        "crossQuotaWeight": 10,
                        "weight.cpu": 10,
                        "weight.memory": 1,
                    },
                ),
                p("nodeorder"),
                p("binpack"),
            ],
        ],
        EAB,
        wrapper=CONFIGMAP,
    ),
    Example(
        "guide-queue-scoped-overcommit",
        GUIDE + "how_to_use_queue_scoped_overcommit.md",
        "6bbdcd1f97fba66d6535c2d8a5820b32987b93e0",
        [
            [p("priority"), p("gang")],
            [
                p(
                    "overcommit",
                    {"overcommit-factor": 1.2, "max-queue-overcommit-factor": 1.5},
                ),
                p("predicates"),
                p("proportion"),
                p("nodeorder"),
            ],
        ],
        EAB,
    ),
    _gpu_guide(
        "guide-gpu-sharing",
        "how_to_use_gpu_sharing.md",
        "05382d16ca44676be5149a033ee47cb08e4fd996",
        {"predicate.GPUSharingEnable": True},
    ),
    _gpu_guide(
        "guide-gpu-number",
        "how_to_use_gpu_number.md",
        "0d3fd2b3a22a32b0fee75e6d816f3545f3426499",
        {"predicate.GPUNumberEnable": True},
    ),
    Example(
        "guide-vnpu-hami",
        GUIDE + "how_to_use_vnpu.md",
        "2e58caf9c9e2b859398af9e83a203847234c4d76",
        [
            [
                p("predicates"),
                p(
                    "deviceshare",
                    {
                        "deviceshare.AscendHAMiVNPUEnable": True,
                        "deviceshare.SchedulePolicy": "binpack",
                        "deviceshare.KnownGeometriesCMNamespace": "kube-system",
                        "deviceshare.KnownGeometriesCMName": "hami-scheduler-device",
                    },
                ),
            ]
        ],
        EAB,
        wrapper=CONFIGMAP,
    ),
    Example(
        "guide-vnpu-mindcluster",
        GUIDE + "how_to_use_vnpu.md",
        "2e58caf9c9e2b859398af9e83a203847234c4d76",
        [[p("predicates"), p("deviceshare", {"deviceshare.AscendMindClusterVNPUEnable": True})]],
        EAB,
        configurations=[
            {
                "name": "init-params",
                "arguments": {"grace-over-time": "900", "presetVirtualDevice": "false"},
            }
        ],
        wrapper=CONFIGMAP,
        quirk=ELLIPSIS,
        refuses='data."volcano-scheduler.conf"',
    ),
    Example(
        "guide-group-topology-affinity",
        GUIDE + "how_to_use_group_topology_affinity.md",
        "e219ba2ac39dc6908a8a2cb23f844bffbb51af19",
        [
            [p("priority"), p("gang"), p("predicates")],
            [
                p("group-topology-affinity", {"weight": 10}),
                p(
                    "network-topology-aware",
                    {"weight": 10, "hypernode.binpack.cpu": 5, "hypernode.binpack.memory": 1},
                ),
            ],
        ],
        EAB,
        wrapper=DATA_ONLY,
        refuses="<configuration>",
    ),
    Example(
        "guide-scheduling-gates",
        GUIDE + "how_to_use_scheduling_gates_queue_admission.md",
        "1a2ac07604093e58e44c88d139e46fd40944ba82",
        [[p("priority"), p("gang")], [p("predicates"), p("capacity"), p("nodeorder")]],
        EAB,
    ),
    Example(
        "source-tdm-plugin-comment",
        "pkg/scheduler/plugins/tdm/tdm.go",
        "10b772e760ac2e755797d53e4613fb4d587cc264",
        [
            [
                p(
                    "tdm",
                    {
                        "tdm.revocable-zone.rz1": "10:00-21:00",
                        "tdm.revocable-zone.rz2": "12:00-14:00",
                        "tdm.evict.period": "1m",
                    },
                )
            ]
        ],
        "enqueue, reclaim, allocate, preempt",
    ),
    Example(
        "design-tdm",
        "docs/design/tdm-plugin.md",
        "05ecf868fc2e21fea75c7cc065527593f9dde618",
        [[p("tdm", {"tdm.revocable-zone.rz1": "1:00-4:00", "tdm.evict.period": "1m"})]],
    ),
    Example(
        "design-hierarchical-capacity",
        "docs/design/hierarchical-queue-on-capacity-plugin.md",
        "0800a757ce3625d97246d2d817f05914460f67da",
        [
            [p("priority"), p("gang", **NO_PREEMPTABLE), p("conformance")],
            [
                p("drf", **NO_PREEMPTABLE),
                p("predicates"),
                p(
                    "capacity",
                    {"overwriteRootQueueRealCapability": True},
                    enableHierarchy=True,
                ),
            ],
        ],
        "enqueue, reclaim, allocate",
    ),
    Example(
        "design-capacity-card",
        "docs/design/capacity-card.md",
        "4557eb411c9f08d9630294f34ca22555ef58e952",
        [[p("capacity-card", {"cardUnlimitedCpuMemory": True, "nodeOrderWeight": 1.0})]],
        EAB,
    ),
    Example(
        "design-overcommit-binpack",
        *OVERCOMMIT_DESIGN,
        [
            [
                p(
                    "binpack",
                    {
                        "binpack.weight": 10,
                        "binpack.cpu": 5,
                        "binpack.memory": 1,
                        "binpack.resources": "nvidia.com/gpu, example.com/foo",
                        "binpack.resources.nvidia.com/gpu": 2,
                        "binpack.resources.example.com/foo": 3,
                    },
                )
            ]
        ],
        "enqueue, reclaim, allocate, backfill, preempt",
    ),
    _overcommit(
        "design-overcommit-1",
        **{
            "overcommit-factor.cpu": 1.2,
            "overcommit-factor.memory": 1.0,
            "overcommit-factor.ephemeral-storage": 1.2,
            "overcommit-factor.pods": 1.2,
            "overcommit-factor.nvidia.com/gpu": 1.2,
        },
    ),
    _overcommit("design-overcommit-2", **{"overcommit-factor": 1.3}),
    _overcommit(
        "design-overcommit-3",
        **{
            "overcommit-factor.cpu": 1.2,
            "overcommit-factor.nvidia.com/gpu": 1.3,
            "overcommit-factor": 1.0,
        },
    ),
    _overcommit("design-overcommit-4", **{"overcommit-factor.cpu": 1.2}),
    _overcommit("design-overcommit-5"),
    Example(
        "design-node-group",
        "docs/design/node-group.md",
        "3e801873510f67ad9644f26170cd485f2e0ae45a",
        [
            BASE_FIRST,
            [
                p("drf"),
                p("predicates"),
                p("proportion"),
                p("nodegroup", {"enablePreferredOrder": True}, enableHierarchy=True),
            ],
        ],
        "allocate, backfill, preempt, reclaim",
    ),
]
