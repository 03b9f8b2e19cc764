"""Log backends: the only modules that touch storage drivers."""
