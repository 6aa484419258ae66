"""typos: the nearest known name for a did-you-mean."""

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.typos import nearest, typo_distance


@pytest.mark.parametrize(
    ("a", "b", "distance"),
    [("NGL", "NGL", 0), ("NLG", "NGL", 1), ("CTXX", "CTX", 1), ("CTX", "CTXX", 1), ("KV_TYP", "KV_TYPE", 1),
     ("PARRALEL", "PARALLEL", 2), ("", "ABC", 3), ("TEAM", "TEMP", 2), ("abc", "cba", 2)],
)
def test_typo_distance(a, b, distance):
    for first, second in ((a, b), (b, a)):  # symmetric
        assert typo_distance(first, second) == distance


KNOWN = ["CTX", "CTX_SIZE", "CTX_CHECKPOINTS", "NGL", "PORT", "THREADS", "TOP_K", "TOP_P"]


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("NLG", ["NGL"]),
        ("THREAD", ["THREADS"]),
        ("TOP_X", ["TOP_K", "TOP_P"]),  # a tie: both, sorted
        ("CTX_SIZ", ["CTX_SIZE"]),
        ("PORTS", ["PORT"]),
        ("TEAM", []),
        ("DESCRIPTION", []),
    ],
)
def test_nearest(name, expected):
    assert nearest(name, KNOWN) == expected


def test_a_missing_word_suggests_every_longer_name():
    assert nearest("CTX", ["CTX_SIZE", "CTX_CHECKPOINTS", "FIT_CTX"]) == ["CTX_CHECKPOINTS", "CTX_SIZE"]
