"""The drivers of the pure step (:mod:`controller.policy.step`) on a clock: :mod:`.virtual`
on a virtual clock (simulation, demo, harnesses), :mod:`.live` on the real clock (``tide
run``), and :mod:`.leadership` (who may decide and act)."""
