"""The rollout lock file (_converge/rollout_lock.py) on a real file, table-driven: what hold() returns and leaves in
the file, what it refuses, and that check mode and a refused lease write nothing."""

import json

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._converge.rollout_lock import LeaseRefused, hold
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._judgements.rollout_lock import (
    LockHeld,
    holder_id,
    lease_refused,
)

ME = {"controller": "c1", "pid": 10, "pid_start": "5"}
OTHER = {"controller": "c2", "pid": 20, "pid_start": "7", "user": "ops", "playbook": "p", "taken": 1000}
NOW = 2000


def params(path, **more):
    return {"state": "acquired", "path": str(path), "lease_s": 3600, "holder": ME, "take_over": "", **more}


CASES = [
    # name, file's text before, options, check mode -> result, file's text after
    ("a free lock is taken", None, {}, False,
     {"changed": True, "holder": {**ME, "taken": NOW}}, json.dumps({**ME, "taken": NOW}, sort_keys=True) + "\n"),
    ("in check mode nothing is written", None, {}, True, {"changed": True, "holder": {**ME, "taken": NOW}}, ""),
    ("a damaged file is no holder", "{not json", {}, False,
     {"changed": True, "holder": {**ME, "taken": NOW}}, json.dumps({**ME, "taken": NOW}, sort_keys=True) + "\n"),
    ("a file holding a list is no holder", "[1]", {}, False,
     {"changed": True, "holder": {**ME, "taken": NOW}}, json.dumps({**ME, "taken": NOW}, sort_keys=True) + "\n"),
    ("one's own lock is kept", json.dumps({**ME, "taken": 1}), {}, False,
     {"changed": False, "holder": {**ME, "taken": 1}}, json.dumps({**ME, "taken": 1})),
    ("one's own lock is released", json.dumps({**ME, "taken": 1}), {"state": "released"}, False,
     {"changed": True, "holder": {}}, ""),
    ("another's lock stays on release", json.dumps(OTHER), {"state": "released"}, False,
     {"changed": False, "holder": OTHER}, json.dumps(OTHER)),
    ("a gone holder is taken over", json.dumps(OTHER), {"take_over": holder_id(OTHER)}, False,
     {"changed": True, "holder": {**ME, "taken": NOW}, "previous": OTHER},
     json.dumps({**ME, "taken": NOW}, sort_keys=True) + "\n"),
    ("an expired lock is taken over", json.dumps(OTHER), {"lease_s": 500}, False,
     {"changed": True, "holder": {**ME, "taken": NOW}, "previous": OTHER},
     json.dumps({**ME, "taken": NOW}, sort_keys=True) + "\n"),
]


@pytest.mark.parametrize("case", CASES, ids=[case[0] for case in CASES])
def test_hold(tmp_path, case):
    _name, before, options, check_mode, result, after = case
    path = tmp_path / "run" / "rollout.lock"
    if before is not None:
        path.parent.mkdir()
        path.write_text(before)
    assert hold(params(path, **options), check_mode, clock=lambda: NOW + 0.5) == result
    assert path.read_text() == after


def test_a_held_lock_is_refused_naming_its_holder_and_left_as_it_is(tmp_path):
    path = tmp_path / "rollout.lock"
    path.write_text(json.dumps(OTHER))
    with pytest.raises(LockHeld) as held:
        hold(params(path), False, clock=lambda: NOW)
    assert held.value.holder == OTHER
    assert str(held.value).startswith("another rollout holds this host: controller c2, pid 20, started ")
    assert f"remove {path} or wait for its lease (3600 s)" in str(held.value)
    assert path.read_text() == json.dumps(OTHER)


@pytest.mark.parametrize(("lease", "refused"), [
    (59, "lease_s=59: a lease is from 60 to 604800 seconds"),
    (-1, "lease_s=-1: a lease is from 60 to 604800 seconds"),
    (604801, "lease_s=604801: a lease is from 60 to 604800 seconds"),
    (60, ""),
    (604800, ""),
])
def test_the_lease_bounds(tmp_path, lease, refused):
    assert lease_refused(lease) == refused
    path = tmp_path / "run" / "rollout.lock"
    if refused:
        with pytest.raises(LeaseRefused, match=f"^{refused}$"):
            hold(params(path, lease_s=lease), False)
        assert not path.parent.exists()  # refused before the lock is read
    else:
        assert hold(params(path, lease_s=lease), False)["changed"] is True
