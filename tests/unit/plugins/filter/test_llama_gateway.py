"""The gateway role's filters (filter/llama_gateway.py): routes from the fleet's reports, and what to put back
(what to drain and the rollout's order: tests/unit/plugins/plugin_utils/test_fleet_run.py)."""

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.llamafleet.llamacpp.plugins.filter import llama_gateway as filters
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils import role_vars
from tests.unit.support.counting import CountingDict

ROW = {"instance": "main", "state": "deployed", "host": "0.0.0.0", "port": "8080", "slots": 2, "model_name": "tiny"}
PRESETS = {"chat": {"MODEL": "m.gguf", "API_KEY": "preset-key-0001"}}


def _host(report, instances=None, address=None):
    variables = {"llama_server_report": report, "llama_server_presets": PRESETS,
                 "llama_server_instances": instances if instances is not None else [
                     {"name": "main", "preset": "chat", "api_key": "instance-key-01"}]}
    if address:
        variables["ansible_host"] = address
    return variables


def test_gateway_servers_from_reports():
    hostvars = {"h1": _host([ROW], address="10.0.0.1"),
                "h2": _host([{**ROW, "state": "failed"}], address="10.0.0.2"),
                "h3": _host([ROW], instances=[{"name": "main", "preset": "chat"}]),  # the preset's key
                "h4": {"ansible_host": "10.0.0.4"}}  # no report in this run
    found = filters.gateway_servers(hostvars, ["h1", "h2", "h3", "h4"])
    assert found["servers"] == [
        {"host": "h1", "instance": "main", "address": "10.0.0.1", "port": 8080, "slots": 2, "model": "tiny"},
        {"host": "h3", "instance": "main", "address": "h3", "port": 8080, "slots": 2, "model": "tiny"}]
    assert found["server_keys"] == {"h1:main": "instance-key-01", "h3:main": "preset-key-0001"}
    assert found["verified"] == [{"host": "h1", "instance": "main"}, {"host": "h3", "instance": "main"}]
    assert [note.split(" is left out")[0] for note in found["notes"]] == ["h2/main", "h4"]


def test_kept_hosts_are_left_to_the_module():
    hostvars = {"h1": _host([ROW], address="10.0.0.1"), "h2": {"ansible_host": "10.0.0.2"}}
    found = filters.gateway_servers(hostvars, ["h1", "h2"], ["h2"])
    assert [server["host"] for server in found["servers"]] == ["h1"]
    assert found["notes"] == []
    assert found["keep_hosts"] == ["h2"]  # as given: the role's next task reads them here
    assert filters.gateway_servers(hostvars, ["h1"])["keep_hosts"] == []
    assert filters.gateway_servers({"h2": {}}, ["h2"], ["h2"])["servers"] == []


def test_a_cordoned_hosts_hand_placed_instances_leave_the_rotation_and_its_replicas_stay():
    replica = {**ROW, "instance": "tiny-0", "port": "8081"}
    hostvars = {"h1": {**_host([ROW, replica], address="10.0.0.1"),
                       "llama_server_placed_instances": [{"name": "tiny-0", "preset": "chat"}]},
                "h2": _host([ROW], address="10.0.0.2")}
    found = filters.gateway_servers(hostvars, ["h1", "h2"], [], ["h1"])
    assert [(server["host"], server["instance"]) for server in found["servers"]] == [("h1", "tiny-0"), ("h2", "main")]
    assert "h1:main" not in found["server_keys"]
    uncordoned = filters.gateway_servers(hostvars, ["h1", "h2"], [], [])
    assert [(server["host"], server["instance"]) for server in uncordoned["servers"]] == [
        ("h1", "main"), ("h1", "tiny-0"), ("h2", "main")]


def test_gateway_servers_refuses_what_it_cannot_route():
    with pytest.raises(AnsibleFilterError, match="no host of the fleet was judged"):
        filters.gateway_servers({"h1": {}}, ["h1"])
    with pytest.raises(AnsibleFilterError, match="cannot route the fleet: h1/main: its engine lists the model"):
        filters.gateway_servers({"h1": _host([{**ROW, "model_name": "a b"}])}, ["h1"])


def test_absent_and_broken_instances_have_no_key():
    variables = _host([], instances=[{"name": "gone", "state": "absent", "api_key": "k" * 10},
                                     {"name": "odd", "preset": "missing"}, "not a dict"])
    assert role_vars.instance_keys(variables) == {}


@pytest.mark.parametrize(
    ("rows", "back"),
    [([ROW], ["main"]), ([{**ROW, "state": "failed"}], []), ([{**ROW, "state": "previewed"}], []), (None, [])],
)
def test_deployed_instances(rows, back):
    assert filters.deployed_instances(rows, "h1") == [{"host": "h1", "instance": name} for name in back]


def test_the_filters_are_registered():
    names = {"gateway_servers", "gateway_urls", "restarting_instances", "deployed_instances", "unfinished_hosts",
             "gateways_to_configure"}
    assert set(filters.FilterModule().filters()) == names


def test_gateway_servers_read_each_host_and_its_presets_once():
    instances = [{"name": name, "preset": "small"} for name in ("a", "b", "c")]
    rows = [{**ROW, "instance": name} for name in ("a", "b", "c")]
    variables = CountingDict({**_host(rows, address="10.0.0.1"), "llama_server_instances": instances,
                              "llama_server_presets": {"small": {"model": "a.gguf"}}})
    hostvars = CountingDict({"h1": variables})
    found = filters.gateway_servers(hostvars, ["h1"])
    assert [server["instance"] for server in found["servers"]] == ["a", "b", "c"]
    assert hostvars.read == ["h1"]
    assert variables.read.count("llama_server_presets") == 1


@pytest.mark.parametrize(("hostvars", "hosts", "said"), [
    ({"h1": {}}, ["h1"], "no host of the fleet was judged"),
    ({"h1": _host([{**ROW, "model_name": "a model with spaces"}], address="10.0.0.1")}, ["h1"],
     "the gateway cannot route the fleet"),
])
def test_gateway_servers_says_why_as_a_value_when_asked(hostvars, hosts, said):
    # The role reads the fleet once for the play's gateways (run_once), then fails each of them with this.
    with pytest.raises(AnsibleFilterError, match=said):
        filters.gateway_servers(hostvars, hosts)
    found = filters.gateway_servers(hostvars, hosts, errors="value")
    assert list(found) == ["error"]
    assert said in found["error"]


def test_gateway_servers_routes_alike_either_way_and_refuses_another_errors():
    hostvars = {"h1": _host([ROW], address="10.0.0.1")}
    assert filters.gateway_servers(hostvars, ["h1"], errors="value") == filters.gateway_servers(hostvars, ["h1"])
    with pytest.raises(AnsibleFilterError, match="errors='ignore': give raise or value"):
        filters.gateway_servers(hostvars, ["h1"], errors="ignore")
