"""Volcano's session framework, without its I/O and its randomness.

Where things are:

* :mod:`~controller.framework.plugin` — ``Plugin`` / ``Action`` protocols, ``PluginContext``,
  ``PluginSpec`` / ``ActionSpec`` registry entries;
* :mod:`~controller.framework.points` — ``Vote``, ``FitError``, ``Victim``, the callable shapes
  and the enable-flag names;
* :mod:`~controller.framework.session` — ``Session``: the world at ``now`` plus the tier walk
  (registration lives in :mod:`~controller.framework.extensions`);
* :mod:`~controller.framework.statement` — ``Statement``: staged evict / pipeline / allocate,
  committed as decision events;
* :mod:`~controller.framework.view` — the copy-on-write view of the cluster projection;
* :mod:`~controller.framework.config` — ``load_config`` / ``TideConfig``; ``tiers`` holds
  ``PluginConf`` / ``TierConf``; ``durations.parse_duration``; ``errors.ConfigError``;
* :mod:`~controller.framework.nodes` — THE node search (predicate, prioritise, select best),
  with :mod:`~controller.framework.search` its proven-equal hot path and
  :mod:`~controller.framework.util` the feasible-node count;
  :mod:`~controller.framework.simulate` — scratch node copies for what-if (dry runs);
  :mod:`~controller.framework.jobs` — gang counting (Volcano's ``JobInfo`` methods,
  volcano-sh/volcano pkg/scheduler/api/job_info.go).

Everything here is pure and synchronous: no clock but ``Session.now``, no randomness, sorted
iteration, and the projection is never mutated.
"""
