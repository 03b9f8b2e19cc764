"""The log: every record tide writes, how it is encoded, and where it is stored.

Nothing here knows about Kubernetes policy. Data flows one way: sources append to the
log, projections fold it, policies decide over the folds, decisions go back on it.
"""

from streams.backends import open_log
from streams.events import EVENT_TYPES, Event, format_time, make_event, parse_time
from streams.log import EventLog, Quarantined

__all__ = [
    "EVENT_TYPES",
    "Event",
    "EventLog",
    "Quarantined",
    "format_time",
    "make_event",
    "open_log",
    "parse_time",
]
