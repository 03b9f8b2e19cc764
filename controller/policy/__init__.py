"""Policy: what tide decides, as pure functions of the log — no I/O, no clock.

Everything under this package is a fold or a decision over the World: the Volcano-style
session framework (:mod:`.framework`), its plugins (:mod:`.plugins`) and actions
(:mod:`.actions`), pressure eviction (:mod:`.pressure`), one session
(:mod:`.engine`), the router of a decision point (:mod:`.decide`), the plugin and action
tables (:mod:`.builtins`), the configuration loader (:mod:`.loader`), the step that says
what a record makes the controller write (:mod:`.step`) and the ``trigger.fired``
records (:mod:`.trigger_events`). import-linter forbids every driver and I/O library
here (``pyproject.toml``: "Policy imports no driver and no I/O library"); the drivers
that feed it on a clock live in :mod:`controller.drive`.
"""
