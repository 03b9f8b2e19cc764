"""tide's benchmark suite (not part of the test run): ``python -m benchmarks.run``."""
