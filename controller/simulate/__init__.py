"""Virtual-time runs of the controller against the simulated cluster: `tide simulate`
and `tide demo`."""
