"""Near misses: is a name the user wrote a slip of the keyboard for one tide knows?

A configuration key or a plugin name tide does not know is usually one of two things: a
name of Volcano's or Koordinator's that tide does not implement (skipped with a warning, so
that a real ConfigMap still runs), or a typo of one tide does implement (``tmd``,
``shufle``, ``timezne``), which must stop start-up: running with TDM off, or in UTC, because
of one transposed letter is the quiet failure a strict configuration exists to prevent.
The two are told apart by the edit distance to the names tide knows.

The distance is Damerau-Levenshtein in its optimal-string-alignment form (insertions,
deletions, substitutions, and transpositions of two adjacent letters, each costing one),
over the lower-cased names. A name is a near miss of a known one within distance 1 when
either is at most four letters long (``tmd`` → ``tdm``; ``pdb`` and ``cdp`` are two edits
from ``tdm`` and are real Volcano plugins), within 2 otherwise (``shufle``, ``timezne``,
``nodeordr``) — and never when it is itself a name Volcano or Koordinator defines.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["distance", "near_miss"]


def distance(a: str, b: str) -> int:
    """The optimal-string-alignment (restricted Damerau-Levenshtein) distance of ``a`` and ``b``."""
    before: list[int] = []
    previous = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        current = [i] + [0] * len(b)
        for j, y in enumerate(b, 1):
            current[j] = min(
                previous[j] + 1,  # deletion
                current[j - 1] + 1,  # insertion
                previous[j - 1] + (x != y),  # substitution
            )
            if i > 1 and j > 1 and x == b[j - 2] and a[i - 2] == y:
                current[j] = min(current[j], before[j - 2] + 1)  # transposition
        before, previous = previous, current
    return previous[len(b)]


def _limit(a: str, b: str) -> int:
    return 1 if min(len(a), len(b)) <= 4 else 2


def near_miss(name: str, known: Iterable[str], *, foreign: Iterable[str] = ()) -> str | None:
    """The known name ``name`` is most likely a misspelling of, or None.

    Args:
        name: what the configuration says.
        known: the names tide implements (``name`` itself among them: None).
        foreign: names that are real elsewhere (Volcano's plugins tide skips): never a slip.

    Returns:
        The nearest known name within the distance of the module's rule (the first in
        sorted order among equally near ones), or None.
    """
    names = sorted(set(known))
    if name in names or name in set(foreign):
        return None
    lowered = name.lower()
    found = [
        (distance(lowered, candidate.lower()), candidate)
        for candidate in names
        if distance(lowered, candidate.lower()) <= _limit(lowered, candidate)
    ]
    return min(found)[1] if found else None
