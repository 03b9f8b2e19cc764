"""Volcano's session framework, without its I/O and its randomness.

Where things are:

* :mod:`~controller.policy.framework.plugin` — ``Plugin`` / ``Action`` protocols, ``PluginContext``,
  ``PluginSpec`` / ``ActionSpec`` registry entries;
* :mod:`~controller.policy.framework.points` — ``Vote``, ``FitError``, ``Victim``, the callable
shapes
  and the enable-flag names;
* :mod:`~controller.policy.framework.session` — ``Session``: the world at ``now`` plus the tier walk
  (registration lives in :mod:`~controller.policy.framework.extensions`);
* :mod:`~controller.policy.framework.statement` — ``Statement``: staged evict / pipeline / allocate,
  committed as decision events;
* :mod:`~controller.policy.framework.view` — the copy-on-write view of the cluster projection
  (read through :mod:`~controller.policy.framework.view_mappings`, whole-cluster questions in
  :mod:`~controller.policy.framework.view_queries`, fast copies in
  :mod:`~controller.policy.framework.view_clones`);
* :mod:`~controller.policy.framework.config` — ``load_config`` / ``TideConfig``; ``tiers`` holds
  ``PluginConf`` / ``TierConf``; ``durations.parse_duration``; ``errors.ConfigError``;
* :mod:`~controller.policy.framework.nodes` — THE node search (predicate, prioritise, select best),
  with :mod:`~controller.policy.framework.search` its proven-equal hot path and
  :mod:`~controller.policy.framework.feasible` the feasible-node count;
  :mod:`~controller.policy.framework.simulate` — scratch node copies for what-if (dry runs);
  :mod:`~controller.policy.framework.jobs` — gang counting (Volcano's ``JobInfo`` methods,
  volcano-sh/volcano pkg/scheduler/api/job_info.go).

Everything here is pure and synchronous: no clock but ``Session.now``, no randomness, sorted
iteration, and the projection is never mutated.
"""
