"""What the host judge hands the placement: each found replica with its need and whether it runs its plan, the
memory the running engines reserved and do not use yet, the hand-placed instances' ports, and each deployment's
need (from a replica found here, else planned here, else why not)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._converge import fleet_readings, host_judge
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._placement.inputs import Card
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._placement.readings import (
    HostCapacity,
    Need,
    PlacedReplica,
)

GEMMA = {"name": "gemma", "preset": {"MODEL": "g.gguf"}, "environment": {}, "gpus": 0, "version": "v-gemma"}
TINY = {"name": "tiny", "preset": {"MODEL": "t.gguf"}, "environment": {}, "gpus": 0, "version": "v-tiny"}
RECORD = PlacedReplica(instance="tiny-0", deployment="tiny", replica=0, port=8081)


def memory(host_mib):
    return {"known": True, "host_mib": host_mib, "cards_mib": 0}


@pytest.fixture
def probes(monkeypatch):
    monkeypatch.setattr(fleet_readings, "ram_facts", lambda: (24000, 20000))
    monkeypatch.setattr(fleet_readings, "list_gpus", lambda: (None, "no NVML"))
    monkeypatch.setattr(fleet_readings, "listening_ports", lambda: {22, 8080, 8081})
    planned = []

    def estimate(_params, deployment, engine, gpus):
        planned.append((deployment["name"], engine, gpus))
        return memory(826)

    monkeypatch.setattr(host_judge, "estimate_here", estimate)
    return planned


def test_readings_of_a_host_with_a_hand_instance_and_a_replica(probes):
    params = {"instances": [{"name": "main", "preset": {"PORT": "8080"}},
                            {"name": "side", "preset": {"EXTRA_ARGS": "--port 9000"}}]}
    seen = {"main": {"memory": memory(800), "resident_mib": 300},  # runs: 500 MiB reserved, not resident
            "side": {"memory": memory(100)},  # does not run: nothing reserved
            "tiny-0": {"memory": memory(78), "resident_mib": 90}}  # more resident than estimated: 0
    found = host_judge.readings(params, [RECORD], {"tiny": TINY, "gemma": GEMMA}, seen, engine="/e/llama-server",
                                failed=set())
    assert found.capacity == HostCapacity(ram_total_mib=24000, ram_free_mib=19500, reserved_mib=500,
                                          ports_used=(22, 8080, 9000))
    assert found.placed == (replace(RECORD, memory_mib=78, version="v-tiny", current=True),)
    # tiny's need comes from its replica here; gemma's is planned here.
    assert found.estimates == {"gemma": Need(memory_mib=826), "tiny": Need(memory_mib=78)}
    assert probes == [("gemma", "/e/llama-server", ())]
    assert found.needs_preparing is False


def test_a_replica_that_does_not_run_its_plan_or_was_not_judged_is_not_current(probes):
    found = host_judge.readings({"instances": []}, [RECORD], {"tiny": TINY}, {"tiny-0": {"memory": memory(78)}},
                                engine="/e", failed={"tiny-0"})
    assert found.placed[0].current is False
    gone = replace(RECORD, instance="old-0", deployment="old")
    found = host_judge.readings({"instances": []}, [gone], {"tiny": TINY}, {}, engine="/e", failed=set())
    assert found.placed == (gone,)  # no need, no version, not current


def test_a_host_not_ready_to_plan_says_why(probes):
    found = host_judge.readings({"instances": []}, [], {"gemma": GEMMA}, {}, engine="", failed=set())
    assert found.estimates == {"gemma": Need(why="the host is not ready to plan yet (engine, runtime or model)")}
    assert found.needs_preparing is True
    assert probes == []
    # Nothing to place: nothing to prepare for.
    assert host_judge.readings({"instances": []}, [], {}, {}, engine="", failed=set()).needs_preparing is False


def test_a_card_deployment_on_a_host_with_too_few_cards_is_not_planned():
    found = host_judge.estimate_here({"settings": {}}, {**GEMMA, "gpus": 2}, "/e", [Card("GPU-1", 0, 24000, 20000)])
    assert found == {"known": False, "why_unknown": "the host has 1 card(s), a replica takes 2"}
