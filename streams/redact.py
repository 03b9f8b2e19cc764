"""What tide does not keep of the objects it records: secrets and large bulk no policy reads.

Why: raw Kubernetes objects go onto the log as they are, and a log is copied, exported
and attached to bug reports. A password in a container's ``env[].value`` would be kept
for ever (and copied into every pod the simulation recreates); a Secret sent by mistake
would sit in the quarantine verbatim. So, where objects enter (``streams.recording``
for recordings, ``controller.drive.sources.tap`` for the live watch):

* :data:`STRIPPED_ANNOTATIONS` and ``metadata.managedFields`` are dropped;
* every container's ``env[].value`` is dropped (``name`` and ``valueFrom`` stay: a
  reference names where a value lives, not the value);
* the quarantine's copy of a line (:func:`redact_raw`) has the ``data`` and
  ``stringData`` of any Secret, every ``env[].value`` and the stripped annotations
  replaced by ``<redacted>``; a line that is not JSON (cut short, mangled) is redacted
  as text: a line naming a Secret is replaced whole, and the value after any key that
  may hold a secret (``value``, ``password``, ``token``, ``data``…) is replaced.

No policy reads any of these; docs/commands.md ("What tide keeps") lists them.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from streams.limits import LimitError, check_nesting
from streams.payloads import RawObject

#: annotations dropped from every object: large copies of the object itself
STRIPPED_ANNOTATIONS = (
    "kubectl.kubernetes.io/last-applied-configuration",
    "deployment.kubernetes.io/last-applied-configuration",
    "control-plane.alpha.kubernetes.io/leader",
)

#: metadata fields dropped from every object
STRIPPED_METADATA = ("managedFields",)
#: pod spec lists whose containers have their ``env[].value`` dropped
CONTAINER_LISTS = ("containers", "initContainers", "ephemeralContainers")
REDACTED = "<redacted>"

JSON = RawObject  # a Kubernetes object as raw JSON


def strip_object(obj: JSON) -> JSON:
    """``obj`` without what tide does not keep (see the module docstring); copies only
    the parts it changes, and returns ``obj`` itself when nothing is dropped."""
    out = obj
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        new_meta = _strip_metadata(meta)
        if new_meta is not meta:
            out = {**out, "metadata": new_meta}
    spec = obj.get("spec")
    if isinstance(spec, dict):
        new_spec = _strip_pod_spec(spec)
        template = spec.get("template")
        if isinstance(template, dict):  # a workload's pod template
            new_template = strip_object(template)
            if new_template is not template:
                new_spec = {**new_spec, "template": new_template}
        if new_spec is not spec:
            out = {**out, "spec": new_spec}
    return out


def strip_watch(data: JSON) -> JSON:
    """A ``k8s.watch`` payload with its object stripped (:func:`strip_object`)."""
    obj = data.get("object")
    if not isinstance(obj, dict):
        return data
    stripped = strip_object(obj)
    return data if stripped is obj else {**data, "object": stripped}


def redact_raw(raw: str) -> str:
    """The quarantine's copy of a line, with secret values replaced (text that is not
    JSON is redacted as text: see :func:`redact_text`)."""
    try:
        value = orjson.loads(raw)
        # before anything walks the value: a line set aside for nesting too deep would
        # otherwise exhaust the interpreter's stack here (it is redacted as text instead)
        check_nesting(value, raw.encode())
    except (orjson.JSONDecodeError, LimitError):
        return redact_text(raw)
    redacted, changed = _redact(value)
    if not changed:
        return raw
    return orjson.dumps(redacted, option=orjson.OPT_SORT_KEYS).decode()


#: a line naming a Secret (JSON or YAML-ish): nothing of it is kept
_SECRET_KIND = re.compile(r"""["']?kind["']?\s*:\s*["']?Secret\b""")
#: keys whose value may be secret, and the stripped annotations
_SECRET_KEYS = "|".join(
    [
        "value",
        "data",
        "stringData",
        "password",
        "passwd",
        "token",
        "secret",
        "apiKey",
        "api_key",
        "credentials",
        *(re.escape(key) for key in STRIPPED_ANNOTATIONS),
    ]
)
#: ``"key": "string"`` (possibly cut short), ``"key": {...}`` / ``[...]`` (possibly cut
#: short) or ``key: word`` (YAML-ish), for a key of :data:`_SECRET_KEYS`
_SECRET_VALUE = re.compile(
    rf"""((?<![\w./-])["']?(?:{_SECRET_KEYS})["']?\s*[:=]\s*)"""
    r"""("(?:[^"\\]|\\.)*"?|\{[^{}]*\}?|\[[^\[\]]*\]?|[^\s,}\]]+)""",
    re.IGNORECASE,
)


def redact_text(raw: str) -> str:
    """A quarantined line that is not JSON, with what may be secret replaced: the whole
    line when it names a Secret, else the value after every key of :data:`_SECRET_KEYS`."""
    if _SECRET_KIND.search(raw):
        return f"{REDACTED} (a line naming a Secret that is not JSON)"
    return _SECRET_VALUE.sub(lambda m: m.group(1) + f'"{REDACTED}"', raw)


def _strip_metadata(meta: JSON) -> JSON:
    notes = meta.get("annotations")
    drop_notes = isinstance(notes, dict) and any(k in notes for k in STRIPPED_ANNOTATIONS)
    if not drop_notes and not any(k in meta for k in STRIPPED_METADATA):
        return meta
    new = {k: v for k, v in meta.items() if k not in STRIPPED_METADATA}
    if drop_notes:
        assert isinstance(notes, dict)
        new["annotations"] = {k: v for k, v in notes.items() if k not in STRIPPED_ANNOTATIONS}
    return new


def _strip_pod_spec(spec: JSON) -> JSON:
    out = spec
    for field in CONTAINER_LISTS:
        containers = spec.get(field)
        if not isinstance(containers, list):
            continue
        new = [_strip_container(c) for c in containers]
        if any(a is not b for a, b in zip(new, containers, strict=True)):
            out = {**out, field: new}
    return out


def _strip_container(container: Any) -> Any:
    if not isinstance(container, dict):
        return container
    env = container.get("env")
    if not isinstance(env, list) or not any(isinstance(e, dict) and "value" in e for e in env):
        return container
    kept = [{k: v for k, v in e.items() if k != "value"} if isinstance(e, dict) else e for e in env]
    return {**container, "env": kept}


def _redact(value: Any) -> tuple[Any, bool]:
    """Secret values anywhere in a parsed line replaced by :data:`REDACTED`."""
    if isinstance(value, list):
        items = [_redact(v) for v in value]
        return [v for v, _ in items], any(c for _, c in items)
    if not isinstance(value, dict):
        return value, False
    changed = False
    out: JSON = {}
    secret = value.get("kind") == "Secret"
    for key, item in value.items():
        if secret and key in ("data", "stringData") and item:
            out[key], changed = _hide(item), True
        elif key == "annotations" and isinstance(item, dict):
            notes = {k: REDACTED if k in STRIPPED_ANNOTATIONS else v for k, v in item.items()}
            changed = changed or notes != item
            out[key] = notes
        elif key == "env" and isinstance(item, list):
            env = [
                {**e, "value": REDACTED} if isinstance(e, dict) and "value" in e else e
                for e in item
            ]
            changed = changed or env != item
            out[key] = env
        else:
            out[key], sub = _redact(item)
            changed = changed or sub
    return out, changed


def _hide(item: Any) -> Any:
    if isinstance(item, dict):
        return dict.fromkeys(item, REDACTED)
    return REDACTED
