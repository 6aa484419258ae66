"""The lookup placed_instances: a host's share of the placement as the role's instances, templating only the
deployments the share names, from the host's own llama_fleet_deployments."""

import pytest
from ansible.errors import AnsibleLookupError

from ansible_collections.llamafleet.llamacpp.plugins.filter.fleet_deployments import FilterModule
from ansible_collections.llamafleet.llamacpp.plugins.lookup.placed_instances import LookupModule
from tests.unit.support.host_vars import host_variables

# The second deployment names a variable no host defines: templating it would fail, and the share never names it.
VARIABLES = """
ansible_host: 10.0.0.7
tiny_key: key-tiny-0001
llama_fleet_deployments:
  - {name: tiny, preset: tiny, replicas: 2, api_key: "{{ tiny_key }}", settings: {host: "{{ ansible_host }}"}}
  - {name: big, preset: big, replicas: 1, settings: {host: "{{ no_such_variable }}"}}
"""
SHARE = [{"name": "tiny-1", "deployment": "tiny", "replica": 1, "port": 8081, "cuda_visible_devices": "-1"}]


def _lookup(tmp_path, text=VARIABLES):
    variables, templar, loader = host_variables(tmp_path, text)
    return LookupModule(loader=loader, templar=templar), variables


def test_the_share_as_the_filter_makes_it_of_the_templated_deployments(tmp_path):
    lookup, variables = _lookup(tmp_path)
    found = lookup.run([SHARE], variables)
    templated = [{"name": "tiny", "preset": "tiny", "replicas": 2, "api_key": "key-tiny-0001",
                  "settings": {"host": "10.0.0.7"}}]
    assert found == FilterModule().filters()["placed_instances"](SHARE, templated)
    assert found[0]["name"] == "tiny-1"
    assert found[0]["settings"] == {"host": "10.0.0.7"}
    assert found[0]["api_key"] == "key-tiny-0001"


def test_an_empty_share_reads_nothing(tmp_path):
    lookup, _variables = _lookup(tmp_path)
    assert lookup.run([[]], {}) == []


@pytest.mark.parametrize(("share", "variables", "message"), [
    pytest.param(["tiny-1"], None, "each placement must be a mapping", id="not-a-placement"),
    pytest.param(SHARE, {}, "the host has no list of llama_fleet_deployments", id="no-deployments"),
    pytest.param(SHARE, {"llama_fleet_deployments": {"tiny": {}}}, "the host has no list", id="not-a-list"),
])
def test_refusals(tmp_path, share, variables, message):
    lookup, read = _lookup(tmp_path)
    with pytest.raises(AnsibleLookupError, match=message):
        lookup.run([share], read if variables is None else variables)


def test_a_deployment_the_host_lacks_is_left_out_as_the_filter_leaves_it(tmp_path):
    # The placement made the share from these same deployments: a name it lacks places nothing, as with the filter.
    lookup, variables = _lookup(tmp_path)
    gone = [{**SHARE[0], "deployment": "gone"}]
    assert lookup.run([gone], variables) == FilterModule().filters()["placed_instances"](gone, []) == []
    assert [item["name"] for item in lookup.run([[*gone, *SHARE]], variables)] == ["tiny-1"]
