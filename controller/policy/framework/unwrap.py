"""A pasted Kubernetes object → the configuration inside it, or a one-line refusal.

``kubectl get cm volcano-scheduler-configmap -o yaml`` gives a ConfigMap whose
``data."volcano-scheduler.conf"`` is the scheduler configuration as YAML text
(volcano-sh/volcano installer/helm/chart/volcano/templates/scheduler.yaml); Koordinator's
eviction example in the seeds is a ConfigMap with ``data."eviction-config.yaml"``. Read as
a tide configuration such a file has only unknown keys, so it must be unwrapped, never run
as "no configuration". Any other Kubernetes object (a Deployment, a NodeSLO at the top
level, ...) is refused naming its kind, since it holds no configuration tide can read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from controller.policy.framework.errors import ConfigError
from controller.policy.framework.safe_yaml import YAMLLimitError, load_yaml_text
from streams.payloads import RawConfig

#: ConfigMap data key -> where its parsed YAML goes ("" = the top level)
CONFIGMAP_KEYS: dict[str, str] = {
    "volcano-scheduler.conf": "",
    "tide.yaml": "",
    "eviction-config.yaml": "eviction",
}


def is_kube_object(raw: Mapping[str, Any]) -> bool:
    """A Kubernetes object: ``apiVersion`` and ``kind`` at the top level."""
    return isinstance(raw.get("kind"), str) and isinstance(raw.get("apiVersion"), str)


def _name(raw: Mapping[str, Any]) -> str:
    meta = raw.get("metadata")
    if not isinstance(meta, Mapping) or not meta.get("name"):
        return str(raw.get("kind"))
    namespace = meta.get("namespace")
    return f"{raw.get('kind')} {namespace + '/' if namespace else ''}{meta['name']}"


def unwrap(raw: Mapping[str, Any]) -> tuple[RawConfig, list[str]]:
    """The configuration inside ``raw`` and a note per key read (``raw`` itself if plain).

    Raises:
        ConfigError: ``raw`` is a Kubernetes object other than a ConfigMap, or a ConfigMap
            without a data key tide reads, or one whose value is not a YAML mapping.
    """
    if not is_kube_object(raw):
        return dict(raw), []
    if raw.get("kind") != "ConfigMap":
        raise ConfigError(
            "<configuration>",
            _name(raw),
            f"a Kubernetes {raw.get('kind')} object ({raw.get('apiVersion')}), not a tide, "
            "Volcano or Koordinator configuration",
        )
    data = raw.get("data")
    data = data if isinstance(data, Mapping) else {}
    found = [key for key in CONFIGMAP_KEYS if key in data]
    if not found:
        keys = ", ".join(sorted(str(k) for k in data)) or "none"
        raise ConfigError(
            "<configuration>",
            _name(raw),
            f"a ConfigMap without {' or '.join(repr(k) for k in CONFIGMAP_KEYS)} in its data "
            f"(data keys: {keys})",
        )
    out: RawConfig = {}
    notes = []
    for key in found:
        text = data[key]
        where = f'data."{key}"'
        try:
            loaded = load_yaml_text(text, where=where) if isinstance(text, str) else None
        except YAMLLimitError as exc:
            reason = str(exc).removeprefix(f"{where}: ")
            raise ConfigError(where, _name(raw), reason) from exc
        if not isinstance(loaded, Mapping):
            raise ConfigError(where, _name(raw), "must hold a YAML mapping")
        target = CONFIGMAP_KEYS[key]
        if target:
            out[target] = dict(loaded)
        else:
            out.update({str(k): v for k, v in loaded.items()})
        notes.append(f"read {where} of {_name(raw)}")
    return out, notes
