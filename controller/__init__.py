"""The controller: policies (framework, plugins, actions, engine), triggers, the simulated
cluster, and the `tide` command line."""
