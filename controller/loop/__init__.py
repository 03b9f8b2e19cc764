"""The controller loop: one pure step (:mod:`.step`) and the drivers that run it on a
clock — :mod:`.virtual` on a virtual clock (simulation, demo, harnesses); the live driver
(``tide run``, a later issue) on the real clock."""
