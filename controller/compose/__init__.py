"""Composition: where a run is built from what the command line parsed, in one place.

As kopf's ``running.run`` hands its parsed settings to ``spawn_tasks``, each command of
``controller.cli`` parses its options, the configuration (``read_policy``) and its inputs,
and hands them here; what it gets back is the wired run — the log, the
:class:`~controller.policy.step.Step`, the loop, the triggers and the effector — which it
runs, and whose outcome it prints. Nothing here prints or exits: errors are raised
(``ValueError``s naming the input) and what the user sees stays with the commands.

* :mod:`controller.compose.simulated`: ``tide simulate`` (inputs, end, plan, the spool and
  the simulation on the virtual clock) and the checkpoint and quarantine a command that
  wrote a log leaves in it (``tide demo``, ``tide log import``, ``tide record``);
* :mod:`controller.compose.live`: ``tide run`` (the step on the live loop, the Kubernetes
  effector behind the exactly-once applier, the recorder's sources feeding it).

The layer sits between ``controller.cli`` and ``controller.simulate`` (pyproject.toml,
"Data flows one way").
"""
