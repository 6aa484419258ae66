"""The rollout lock's rules, table-driven: take, keep, release, refuse naming the holder, take over."""

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._judgements.rollout_lock import (
    LockHeld,
    decide,
    expired,
    holder_id,
)

ME = {"controller": "c1", "pid": 10, "pid_start": "5"}
OTHER = {"controller": "c2", "pid": 20, "pid_start": "7", "user": "ops", "playbook": "p", "taken": 1000}
NOW = 2000

CASES = [
    # current, state, lease, take_over -> holder after, written
    ("free lock is taken", {}, "acquired", 3600, "", {**ME, "taken": NOW}, True),
    ("own lock is kept", {**ME, "taken": 1}, "acquired", 3600, "", {**ME, "taken": 1}, False),
    ("expired lock is taken over", OTHER, "acquired", 500, "", {**ME, "taken": NOW}, True),
    ("a gone holder is taken over", OTHER, "acquired", 3600, holder_id(OTHER), {**ME, "taken": NOW}, True),
    ("own lock is released", {**ME, "taken": 1}, "released", 3600, "", {}, True),
    ("another's lock stays on release", OTHER, "released", 3600, "", OTHER, False),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_decisions(case):
    _name, current, state, lease, take_over, after, write = case
    decision = decide(current, ME, state=state, lease_s=lease, take_over=take_over, now=NOW)
    assert (decision.holder, decision.write) == (after, write)


def test_a_live_holder_refuses_naming_it():
    with pytest.raises(LockHeld, match=r"another rollout holds this host: controller c2, pid 20, .*user ops") as err:
        decide(OTHER, ME, state="acquired", lease_s=3600, take_over="", now=NOW)
    assert err.value.holder == OTHER
    # A take-over naming someone else is no take-over.
    with pytest.raises(LockHeld):
        decide(OTHER, ME, state="acquired", lease_s=3600, take_over="c2:20:8", now=NOW)


def test_expiry():
    assert expired(OTHER, 999, NOW)
    assert not expired(OTHER, 1000, NOW)
    assert not expired({}, 0, NOW)
