"""The host reading: one typed shape, built by the judge on the target, sent as a plain mapping, and read back on
the controller. Its wire form is what the judge returned before the shape was typed (the playbook reads
``needs_preparing`` from it), so an upgraded controller and an older judge's answer read each other."""

from __future__ import annotations

import json

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._placement.inputs import Card
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._placement.readings import (
    HostCapacity,
    HostReading,
    Need,
    PlacedReplica,
)

READING = HostReading(
    capacity=HostCapacity(ram_total_mib=24000, ram_free_mib=19500, reserved_mib=500,
                          gpus=(Card(uuid="GPU-1", index=0, total_mib=24000, free_mib=20000),), ports_used=(22, 8080)),
    placed=(PlacedReplica(instance="tiny-0", deployment="tiny", replica=0, port=8081, cuda_visible_devices="GPU-1",
                          memory_mib=78, version="v-tiny", current=True),),
    estimates={"gemma": Need(memory_mib=826), "big": Need(why="no model")},
    needs_preparing=False)

WIRE = {
    "capacity": {"ram_total_mib": 24000, "ram_free_mib": 19500, "reserved_mib": 500,
                 "gpus": [{"uuid": "GPU-1", "index": 0, "total_mib": 24000, "free_mib": 20000}],
                 "ports_used": [22, 8080]},
    "placed": [{"instance": "tiny-0", "deployment": "tiny", "replica": 0, "port": 8081,
                "cuda_visible_devices": "GPU-1", "memory_mib": 78, "version": "v-tiny", "current": True}],
    "estimates": {"gemma": {"memory_mib": 826, "ram_mib": 0}, "big": {"why": "no model"}},
    "needs_preparing": False,
}


def test_the_wire_form_is_the_judges_answer_as_before():
    assert READING.as_dict() == WIRE
    assert json.loads(json.dumps(READING.as_dict())) == WIRE


def test_the_controller_reads_back_what_the_judge_sent():
    assert HostReading.from_dict(json.loads(json.dumps(READING.as_dict()))) == READING


def test_a_host_its_judge_could_not_read_has_no_reading():
    assert HostReading.from_dict(None) is None
    assert HostReading.from_dict({}) is None
    assert HostReading.from_dict({"capacity": {}, "placed": []}) is None


def test_what_a_reading_leaves_out_takes_its_default():
    found = HostReading.from_dict({"capacity": {"ram_free_mib": 900}, "estimates": {"t": {"memory_mib": 9}}})
    assert found == HostReading(capacity=HostCapacity(ram_free_mib=900), estimates={"t": Need(memory_mib=9)})
    assert found.estimates["t"].as_dict() == {"memory_mib": 9, "ram_mib": 0}
