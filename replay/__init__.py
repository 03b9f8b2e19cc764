"""Replay: re-derive, verify and explain decisions from a log. Never talks to a cluster."""
