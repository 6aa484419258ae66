"""The nearest known name to a mistyped one, for "did you mean" in refusals. Pure."""

from __future__ import annotations

from collections.abc import Iterable


def typo_distance(a: str, b: str) -> int:
    """Edits between two names (insert, delete, replace, swap two neighbours): NLG is one from NGL."""
    previous2: list[int] = []
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            cost = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb))
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                cost = min(cost, previous2[j - 2] + 1)
            current.append(cost)
        previous2, previous = previous, current
    return previous[-1]


def nearest(name: str, known: Iterable[str]) -> list[str]:
    """The known names ``name`` most likely means, best first; empty when none is close.

    Close: the fewest edits, at most one (two for names of five characters or more); else the known names
    with one more ``_``-separated word (CTX: CTX_CHECKPOINTS, CTX_SIZE). Sorted, so answers are stable.
    """
    known = sorted(set(known))
    allowed = 1 if len(name) <= 4 else 2
    scored = sorted((typo_distance(name, k), k) for k in known)
    if scored and scored[0][0] <= allowed:
        return [k for d, k in scored if d == scored[0][0]]
    return [k for k in known if k.startswith(name + "_") and k.count("_") == name.count("_") + 1]
