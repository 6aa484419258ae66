"""What the placement reads on a host: the placed replicas' records in the state files (as the instance step
writes them), a plan's estimate as a need, and the capacity's arithmetic."""

from __future__ import annotations

import json

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._converge import fleet_readings
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._placement.deployments import placement_record
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._placement.readings import (
    HostCapacity,
    Need,
    PlacedReplica,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._render.instance_request import state_content


def test_a_hand_placed_instances_state_file_is_as_before():
    assert state_content({"ram_avail_mib": 1234}) == '{\n    "ram_avail_mib": 1234\n}\n'


def test_placed_records_come_back_from_the_state_files_the_step_writes(tmp_path):
    record = placement_record({"deployment": "tiny", "replica": 1}, 8081, "GPU-a")
    (tmp_path / "instance-tiny-1.json").write_text(state_content({"ram_avail_mib": 5}, record))
    (tmp_path / "instance-main.json").write_text(state_content({"ram_avail_mib": 5}))
    (tmp_path / "instance-broken.json").write_text("{not json")
    (tmp_path / "instance-odd.json").write_text(json.dumps({"placement": {"deployment": "x", "replica": "one"}}))
    (tmp_path / "other-tiny-2.json").write_text(state_content({}, record))
    assert fleet_readings.placed_records(str(tmp_path)) == [
        PlacedReplica(instance="tiny-1", deployment="tiny", replica=1, port=8081, cuda_visible_devices="GPU-a")]


def test_no_config_dir_no_records(tmp_path):
    assert fleet_readings.placed_records(str(tmp_path / "missing")) == []
    assert placement_record(None, 8080, "") is None


@pytest.mark.parametrize(
    ("memory", "gpus", "expected"),
    [
        pytest.param({"known": True, "host_mib": 826, "cards_mib": 0}, 0, Need(memory_mib=826), id="ram-replica"),
        pytest.param({"known": True, "host_mib": 300, "cards_mib": 9000}, 2, Need(memory_mib=9000, ram_mib=300),
                     id="card-replica"),
        pytest.param({"known": False, "why_unknown": "no tensor table"}, 0, Need(why="no tensor table"),
                     id="unknown"),
        pytest.param(None, 0, Need(why="the plan has no memory estimate"), id="no-plan"),
    ],
)
def test_need_of(memory, gpus, expected):
    assert fleet_readings.need_of(memory, gpus) == expected


def test_capacity_takes_the_reserved_memory_and_keeps_the_replicas_ports(monkeypatch):
    monkeypatch.setattr(fleet_readings, "ram_facts", lambda: (24000, 20000))
    monkeypatch.setattr(fleet_readings, "list_gpus", lambda: (None, "no NVML"))
    monkeypatch.setattr(fleet_readings, "listening_ports", lambda: {22, 8080, 8081, 8405})
    found = fleet_readings.capacity(reserved_mib=1500, ports_of_replicas=[8081], planned_ports=[8090])
    assert found == HostCapacity(ram_total_mib=24000, ram_free_mib=18500, reserved_mib=1500,
                                 ports_used=(22, 8080, 8090, 8405))
    assert fleet_readings.capacity(reserved_mib=30000, ports_of_replicas=[], planned_ports=[]).ram_free_mib == 0
