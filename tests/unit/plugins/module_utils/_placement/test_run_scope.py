"""What a deploy run may do on each fleet host: read (open or cordoned), frozen (outside the run, failed, or
unreachable and kept), lost (unreachable and placed again); a host outside the run the ledger never saw is named."""

from __future__ import annotations

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._placement.ledger import Ledger, LedgerHost
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._placement.readings import (
    HostCapacity,
    HostReading,
    PlacedReplica,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._placement.run_scope import (
    KEEP,
    REPLACE,
    RunScope,
    run_scope,
)

READ = HostReading(capacity=HostCapacity(ram_free_mib=8000))
TINY_0 = PlacedReplica(instance="tiny-0", deployment="tiny", replica=0, port=8081, memory_mib=78)
TINY_1 = PlacedReplica(instance="tiny-1", deployment="tiny", replica=1, port=8081, memory_mib=78)
LEDGER = Ledger(fleet="f", hosts={"h1": LedgerHost(placed=(TINY_0,)), "h2": LedgerHost(placed=(TINY_1,)),
                                  "h3": LedgerHost(cordoned=True)})
FLEET = ("h1", "h2", "h3")


def scope(*, run_hosts=FLEET, read=FLEET, statuses=None, cordons=None, ledger=LEDGER, unreachable=REPLACE):
    statuses = dict.fromkeys(read, "ok") if statuses is None else statuses
    return run_scope(FLEET, run_hosts, dict.fromkeys(read, READ), statuses=statuses, cordons=cordons or {},
                     ledger=ledger, unreachable=unreachable)


@pytest.mark.parametrize(("given", "expected"), [
    pytest.param(
        {"cordons": {"h3": False}}, RunScope(read=FLEET), id="whole-fleet-read-the-inventory-uncordons-h3"),
    pytest.param(
        {}, RunScope(read=FLEET, cordoned=("h3",)), id="the-ledgers-cordon-speaks-when-the-inventory-is-silent"),
    pytest.param(
        {"cordons": {"h1": True, "h3": None}}, RunScope(read=FLEET, cordoned=("h1", "h3")),
        id="the-inventorys-cordon-wins"),
    pytest.param(
        {"run_hosts": ("h1",), "read": ("h1",), "cordons": {"h3": False}},
        RunScope(read=("h1",), frozen={"h2": (TINY_1,), "h3": ()}, outside=("h2", "h3")),
        id="limit-freezes-the-others-as-the-ledger-has-them"),
    pytest.param(
        {"run_hosts": ("h1",), "read": ("h1",)},
        RunScope(read=("h1",), frozen={"h2": (TINY_1,), "h3": ()}, outside=("h2", "h3"),
                 cordoned_elsewhere=("h3",)),
        id="a-cordoned-host-outside-the-run-is-frozen-and-named"),
    pytest.param(
        {"read": ("h1", "h3"), "statuses": {"h1": "ok", "h3": "ok"}, "cordons": {"h3": False}},
        RunScope(read=("h1", "h3"), lost={"h2": (TINY_1,)}, unreachable=("h2",)),
        id="unreachable-replace-loses-its-replicas"),
    pytest.param(
        {"read": ("h1", "h3"), "statuses": {"h1": "ok", "h3": "ok"}, "cordons": {"h3": False}, "unreachable": KEEP},
        RunScope(read=("h1", "h3"), frozen={"h2": (TINY_1,)}, unreachable=("h2",)),
        id="unreachable-keep-freezes-it"),
    pytest.param(
        {"read": ("h2", "h3"), "statuses": {"h1": "failed", "h2": "ok", "h3": "ok"}, "cordons": {"h3": False}},
        RunScope(read=("h2", "h3"), frozen={"h1": (TINY_0,)}, failed=("h1",)),
        id="a-failed-judge-freezes-its-host"),
    pytest.param(
        {"run_hosts": ("h1",), "read": ("h1",), "ledger": Ledger(fleet="f")},
        RunScope(read=("h1",), frozen={"h2": (), "h3": ()}, outside=("h2", "h3"), unrecorded=("h2", "h3")),
        id="outside-and-never-recorded-is-named"),
    pytest.param(
        {"read": ("h1", "h3"), "statuses": {"h1": "ok", "h3": "ok"}, "ledger": Ledger(fleet="f")},
        RunScope(read=("h1", "h3"), lost={"h2": ()}, unreachable=("h2",)),
        id="unreachable-and-never-recorded-has-nothing-to-place-again"),
])
def test_the_scope_of_a_run(given, expected):
    assert scope(**given) == expected


def test_whole_and_the_hosts_not_read():
    assert scope().whole is True
    assert scope().not_read() == ()
    partial = scope(run_hosts=("h1", "h2"), read=("h1",), statuses={"h1": "ok"})
    assert partial.whole is False
    assert partial.not_read() == ("h3", "h2")


def test_an_unknown_policy_is_refused():
    with pytest.raises(ValueError, match="'sometimes' is not one of replace, keep"):
        scope(unreachable="sometimes")
