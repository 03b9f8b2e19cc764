"""Drive: everything that runs the policy on a clock and talks to the outside.

The virtual and live loops (:mod:`.loop`), leadership, the watch sources
(:mod:`.sources`), the effector and the simulated cluster (:mod:`.effector`), the only
Kubernetes client (:mod:`.kube`), the triggers on APScheduler (:mod:`.triggers`), the one
wall-clock read (:mod:`.clock`), metrics and probes (:mod:`.observe`) and the process
settings (:mod:`.settings`). Code here may do I/O; what it decides comes from
:mod:`controller.policy`.
"""
