"""The controller. The path says whether a line may do I/O: :mod:`controller.policy` is pure
(decisions as functions of the log), :mod:`controller.drive` runs it on a clock and talks
to the outside, :mod:`controller.simulate` wires the virtual cluster, and
:mod:`controller.cli` is the ``tide`` command line."""
