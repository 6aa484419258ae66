"""The deploy playbook's run on the controller (plugin_utils/fleet_run.py and the actions fleet_run, fleet_rollout):
its hosts, its gateways, and the rollout's order and batches."""

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.action import fleet_rollout as rollout_action
from ansible_collections.llamafleet.llamacpp.plugins.action import fleet_run as run_action
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils import fleet_run
from tests.unit.support import actions

INSTANCES = [{"name": "main"}, {"name": "old", "state": "absent"}, "not a dict"]


@pytest.mark.parametrize(
    ("judgement", "drained"),
    [
        ({"current": True, "work": {"all": False, "instances": []}}, []),
        ({"current": False, "work": {"all": False, "instances": ["main"]}}, ["main"]),
        ({"current": False, "work": {"all": False, "instances": ["old"]}}, ["old"]),
        ({"current": False, "work": {"all": True, "instances": []}}, ["main", "old"]),  # the engine changes
        ({"current": False}, ["main", "old"]),  # a judgement of an older collection
        (None, ["main", "old"]),
    ],
)
def test_restarting_instances(judgement, drained):
    expected = [{"host": "h1", "instance": name} for name in drained]
    assert fleet_run.restarting_instances(judgement, "h1", INSTANCES) == expected


def judged(*names, status="judged"):
    return {"_llama_server_judgement": {"current": not names, "work": {"all": False, "instances": list(names)}},
            "llama_fleet_status": status}


def test_rollout_plan():
    hostvars = {"a": judged("main"), "b": judged("main"), "c": judged("main"), "d": judged()}
    models = [{"name": "m", "replicas": ["a/main", "b/main", "d/main"]}, {"name": "n", "replicas": ["c/main"]}]
    # m has three replicas in rotation (d restarts nothing): a and b may go together.
    expected = {"order": ["a", "b", "c"], "serial": [3]}
    assert fleet_run.rollout_plan(hostvars, ["a", "b", "c"], ["100%"], models) == expected
    two = [{"name": "m", "replicas": ["a/main", "b/main"]}, {"name": "n", "replicas": ["c/main"]}]
    assert fleet_run.rollout_plan(hostvars, ["a", "b", "c"], "100%", two) == {
        "order": ["a", "c", "b"], "serial": [2, 1]}
    # No gateway routes: the operator's batches.
    assert fleet_run.rollout_plan(hostvars, ["a", "b", "c"], [1, "100%"]) == {
        "order": ["a", "b", "c"], "serial": [1, 2]}
    assert fleet_run.rollout_plan(hostvars, [], [1], models) == {"order": [], "serial": []}


@pytest.mark.parametrize(
    ("gateways", "serial", "expected"),
    [
        # The hosts with work, in the run's order (the canary first); current (ok) and failed hosts stay out.
        ([], [1, "100%"], {"order": ["a", "b", "c"], "serial": [1, 2]}),
        # The first gateway with routes speaks: two replicas of m (a, b) never restart in one batch.
        (["gw0", "gw1"], ["100%"], {"order": ["a", "c", "b"], "serial": [2, 1]}),
        (["gw0"], "25%", {"order": ["a", "b", "c"], "serial": [1, 1, 1]}),
    ],
)
def test_the_rollout_of_a_run(gateways, serial, expected):
    hostvars = {"a": judged("main"), "x": judged(status="ok"), "b": judged("main"),
                "y": judged("main", status="failed"), "c": judged("main"), "gw0": {}, "gw1": {"llama_gateway_models": [
                    {"name": "m", "replicas": ["a/main", "b/main"]}, {"name": "n", "replicas": ["c/main"]}]}}
    assert fleet_run.rollout(hostvars, ["a", "x", "b", "y", "c"], gateways, serial) == expected


def test_unfinished_hosts():
    hostvars = {"a": judged(status="ok"), "b": judged(status="failed"), "c": judged(status="started"),
                "d": judged(status="judged"), "e": {}}
    assert fleet_run.unfinished(hostvars, ["a", "b", "c", "d", "e"]) == ["c", "d", "e"]


def test_the_run_action_sets_its_fact():
    result, calls = actions.run_action(run_action, {"hosts": ["a", "b"], "inventory_hosts": ["a", "b", "z"],
                                                    "gateway_group": "gw"},
                                       task_vars={"groups": {"gw": ["g1"], "other": ["o"]}})
    assert calls == []
    assert (result["changed"], result["ansible_facts"]) == (False, {"llama_fleet_run": {
        "hosts": ["a", "b"], "inventory_hosts": ["a", "b", "z"], "gateways": ["g1"]}})
    no_group = actions.run_action(run_action, {"hosts": ["a"], "inventory_hosts": ["a"], "gateway_group": "gw"},
                                  task_vars={"groups": {}})[0]
    assert no_group["ansible_facts"]["llama_fleet_run"]["gateways"] == []


def test_the_rollout_action_sets_its_fact_or_names_a_bad_serial():
    hostvars = {"a": judged("main"), "b": judged("main")}
    result = actions.run_action(rollout_action, {"hosts": ["a", "b"], "serial": [1, "100%"]},
                                task_vars={"hostvars": hostvars})[0]
    assert result["ansible_facts"] == {"llama_fleet_rollout": {"order": ["a", "b"], "serial": [1, 1]}}
    bad = actions.run_action(rollout_action, {"hosts": ["a", "b"], "serial": "half"},
                             task_vars={"hostvars": hostvars})[0]
    assert bad["failed"] is True
    assert bad["msg"].startswith("llama_fleet_serial 'half': ")
    assert "accepted: a number, a percentage" in bad["msg"]
