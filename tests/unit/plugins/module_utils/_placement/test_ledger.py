"""The placement ledger: what the controller keeps of the hosts a run does not read. A run merges its hosts into it
by host; a file that is not this fleet's ledger is refused, whole, and never rewritten."""

from __future__ import annotations

import json

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._placement.ledger import (
    KIND,
    VERSION,
    Ledger,
    LedgerError,
    LedgerHost,
    ledger_text,
    read_ledger,
    updated,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._placement.readings import PlacedReplica

TINY_0 = PlacedReplica(instance="tiny-0", deployment="tiny", replica=0, port=8081, memory_mib=78, version="v1",
                       current=True)
TINY_1 = PlacedReplica(instance="tiny-1", deployment="tiny", replica=1, port=8082, memory_mib=78, version="v1",
                       current=True)
GEMMA_0 = PlacedReplica(instance="gemma-0", deployment="gemma", replica=0, port=8083, memory_mib=826, version="v2")
INVENTORY = ("host1", "host2", "host3")
LEDGER = Ledger(fleet="llama_fleet", hosts={"host1": LedgerHost(placed=(GEMMA_0, TINY_0)),
                                            "host2": LedgerHost(placed=(TINY_1,), cordoned=True)})


def _text(**changes) -> str:
    raw = {"kind": KIND, "version": VERSION, "fleet": "llama_fleet",
           "hosts": {"host1": {"cordoned": None, "placed": [TINY_0.as_dict()]}}}
    raw.update(changes)
    return json.dumps(raw)


def test_a_ledger_reads_back_what_was_written():
    assert read_ledger(ledger_text(LEDGER), "llama_fleet", INVENTORY) == LEDGER


def test_the_text_is_stable_so_an_unchanged_fleet_writes_the_same_bytes():
    reordered = Ledger(fleet="llama_fleet", hosts={"host2": LEDGER.hosts["host2"], "host1": LEDGER.hosts["host1"]})
    assert ledger_text(reordered) == ledger_text(LEDGER)
    assert ledger_text(read_ledger(ledger_text(LEDGER), "llama_fleet", INVENTORY)) == ledger_text(LEDGER)
    assert ledger_text(LEDGER).endswith("}\n")


@pytest.mark.parametrize("text", [None, "", "  \n"])
def test_no_file_yet_is_an_empty_ledger(text):
    assert read_ledger(text, "llama_fleet", INVENTORY) == Ledger(fleet="llama_fleet")


@pytest.mark.parametrize(("text", "says"), [
    ("{not json", "it is not JSON"),
    ("[1, 2]", "it is not a placement ledger"),
    (json.dumps({"kind": "something else", "hosts": {}}), "it is not a placement ledger"),
    (json.dumps({"groups": {"llama_fleet": ["host1"]}}), "it is not a placement ledger"),
    (_text(version=2), "its version 2 is not 1"),
    (_text(fleet="other_fleet"), "it is the ledger of the fleet 'other_fleet', and this run deploys 'llama_fleet'"),
    (_text(fleet=None), "it is the ledger of the fleet None"),
    (_text(hosts=["host1"]), "its hosts are list, not a mapping"),
    (_text(hosts={"host1": "tiny-0"}), "its host 'host1' is not a mapping"),
    (_text(hosts={"host1": {"cordoned": "yes"}}), "its host 'host1' has cordoned 'yes', not true, false or null"),
    (_text(hosts={"host1": {"placed": {"tiny-0": 1}}}), "its host 'host1' has placed {'tiny-0': 1}, not a list"),
    (_text(hosts={"host1": {"placed": [{"instance": "tiny-0"}]}}),
     "its host 'host1' has a damaged replica at placed[0]"),
    (_text(hosts={"host1": {"placed": [TINY_0.as_dict(), {**TINY_1.as_dict(), "replica": "one"}]}}),
     "its host 'host1' has a damaged replica at placed[1]"),
    (_text(hosts={"other-a": {}, "other-b": {}, "other-c": {}, "other-d": {}}),
     "none of its 4 host(s) (other-a, other-b, other-c ...) is in this inventory: it belongs to another fleet"),
])
def test_a_file_that_is_not_this_fleets_ledger_is_refused_saying_why(text, says):
    with pytest.raises(LedgerError) as raised:
        read_ledger(text, "llama_fleet", INVENTORY)
    assert says in str(raised.value)


def test_a_ledger_with_some_hosts_gone_from_the_inventory_is_still_this_fleets():
    text = _text(hosts={"host1": {"placed": [TINY_0.as_dict()]}, "retired": {"placed": [TINY_1.as_dict()]}})
    found = read_ledger(text, "llama_fleet", INVENTORY)
    assert set(found.hosts) == {"host1", "retired"}
    assert set(updated(found, INVENTORY).hosts) == {"host1"}


@pytest.mark.parametrize(("placed", "cordoned", "expected"), [
    # A run that read host3 only: host1 and host2 keep their entries.
    ({"host3": [GEMMA_0]}, None,
     {"host1": LedgerHost(placed=(GEMMA_0, TINY_0)), "host2": LedgerHost(placed=(TINY_1,), cordoned=True),
      "host3": LedgerHost(placed=(GEMMA_0,))}),
    # A run that read host2: its replicas are the run's, its cordon record stays.
    ({"host2": []}, None,
     {"host1": LedgerHost(placed=(GEMMA_0, TINY_0)), "host2": LedgerHost(placed=(), cordoned=True)}),
    # Replicas are kept in (deployment, replica) order whatever order the run gave.
    ({"host1": [TINY_0, GEMMA_0, TINY_1]}, None,
     {"host1": LedgerHost(placed=(GEMMA_0, TINY_0, TINY_1)), "host2": LedgerHost(placed=(TINY_1,), cordoned=True)}),
    # A maintenance run: cordons host1, uncordons host2 (false, not null: the record wins over nothing).
    (None, {"host1": True, "host2": False},
     {"host1": LedgerHost(placed=(GEMMA_0, TINY_0), cordoned=True),
      "host2": LedgerHost(placed=(TINY_1,), cordoned=False)}),
    # A host the inventory does not name is not recorded.
    ({"stranger": [TINY_0]}, {"stranger": True},
     {"host1": LedgerHost(placed=(GEMMA_0, TINY_0)), "host2": LedgerHost(placed=(TINY_1,), cordoned=True)}),
])
def test_a_run_merges_its_hosts_into_the_ledger_by_host(placed, cordoned, expected):
    after = updated(LEDGER, INVENTORY, placed=placed, cordoned=cordoned)
    assert dict(after.hosts) == expected
    assert after.fleet == "llama_fleet"


def test_a_host_that_left_the_inventory_leaves_the_ledger():
    assert set(updated(LEDGER, ("host2",)).hosts) == {"host2"}


def test_two_runs_over_disjoint_halves_give_the_ledger_of_one_run_over_both():
    whole = updated(Ledger(fleet="f"), INVENTORY, placed={"host1": [TINY_0], "host2": [TINY_1], "host3": []})
    first = updated(Ledger(fleet="f"), INVENTORY, placed={"host1": [TINY_0], "host3": []})
    second = updated(read_ledger(ledger_text(first), "f", INVENTORY), INVENTORY, placed={"host2": [TINY_1]})
    assert ledger_text(second) == ledger_text(whole)
