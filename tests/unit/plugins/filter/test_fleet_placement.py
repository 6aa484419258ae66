"""The placement's filters: the operator's data placed, errors named, the result printed one line per replica."""

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.llamafleet.llamacpp.plugins.filter import fleet_placement as filters
from ansible_collections.llamafleet.llamacpp.plugins.filter.fleet_placement import (
    FilterModule,
    fleet_place,
    fleet_placement_table,
)


def test_registered_names():
    assert set(FilterModule().filters()) == {"fleet_place", "fleet_placement_table", "controller_path"}


def test_places_and_prints_placed_and_unplaced_replicas():
    result = fleet_place([{"name": "a", "replicas": 2, "memory_mib": 3000}],
                         [{"name": "h1", "ram_free_mib": 8000}])
    lines = fleet_placement_table(result)
    assert lines[0].split()[:3] == ["deployment", "replica", "host"]
    assert lines[1].split()[:6] == ["a", "0", "h1", "-", "3000", "8080"]
    assert lines[2].split()[:3] == ["a", "1", "(unplaced)"]
    assert "spread: each of the 1 host(s) with its labels already runs one of its replicas" in lines[2]
    assert lines[-1] == "note placement.unplaced: 1 replica(s) have no room in the fleet"


def test_an_unreadable_input_fails_naming_the_field():
    with pytest.raises(AnsibleFilterError, match=r"fleet_place: deployments\[0\] \(a\)\.gpus: 'two' is not"):
        fleet_place([{"name": "a", "memory_mib": 1, "gpus": "two"}], [])


@pytest.mark.parametrize(("given", "expected"), [
    ("fleet.yml", "{cwd}/fleet.yml"),
    ("./sub/../fleet.yml", "{cwd}/fleet.yml"),
    ("/etc/fleet.yml", "/etc/fleet.yml"),
    ("~/fleet.yml", "{home}/fleet.yml"),
])
def test_controller_path_is_relative_to_where_the_command_runs(monkeypatch, tmp_path, given, expected):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", "/home/operator")
    assert filters.controller_path(given) == expected.format(cwd=tmp_path, home="/home/operator")


@pytest.mark.parametrize("given", ["", "  ", None, 3])
def test_controller_path_refuses_what_is_not_a_path(given):
    with pytest.raises(AnsibleFilterError, match="is not a path"):
        filters.controller_path(given)
