"""The deploy playbook's run on the controller (plugin_utils/fleet_run.py and the actions fleet_run, fleet_rollout):
its hosts, its gateways, and the rollout's order and batches."""

import json

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.action import fleet_rollout as rollout_action
from ansible_collections.llamafleet.llamacpp.plugins.action import fleet_run as run_action
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._gateway import rollout_bounds
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils import fleet_run, role_vars
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
    expected = [{"host": "h1", "instance": name, "step": name} for name in drained]
    assert fleet_run.restarting_instances(judgement, "h1", INSTANCES) == expected


@pytest.mark.parametrize(
    ("router_drain", "drained"),
    [
        ({"team": ["team/chat", "team/code"]}, ["team/chat", "team/code"]),  # a restart: every model
        ({"team": ["team/code"]}, ["team/code"]),  # a reload of one model
        ({"team": []}, []),  # its models file only: no model drained
    ],
)
def test_a_router_instance_is_drained_model_by_model(router_drain, drained):
    judgement = {"current": False, "work": {"all": False, "instances": ["team", "main"],
                                            "router_drain": router_drain}}
    found = fleet_run.restarting_instances(judgement, "h1", [{"name": "team"}, {"name": "main"}])
    assert found == [*({"host": "h1", "instance": name, "step": "team"} for name in drained),
                     {"host": "h1", "instance": "main", "step": "main"}]


def test_every_model_of_a_router_is_drained_when_a_shared_part_changes():
    instances = [{"name": "team", "models": ["chat", {"name": "code", "preset": "coder"}]}]
    found = fleet_run.restarting_instances({"current": False, "work": {"all": True}}, "h1", instances)
    assert found == [{"host": "h1", "instance": "team/chat", "step": "team"},
                     {"host": "h1", "instance": "team/code", "step": "team"}]


def judged(*names, status="judged"):
    return {"_llama_server_judgement": {"current": not names, "work": {"all": False, "instances": list(names)}},
            "llama_fleet_status": status}


def test_rollout_plan():
    hostvars = {"a": judged("main"), "b": judged("main"), "c": judged("main"), "d": judged()}
    models = [{"name": "m", "replicas": ["a/main", "b/main", "d/main"]}, {"name": "n", "replicas": ["c/main"]}]
    # m has three replicas in rotation: 25 % of them, at least 1, may be out at once; n's only one may go.
    expected = {"order": ["a", "c", "b"], "serial": [2, 1], "allowed": {"m": 1, "n": 1}, "refusal": ""}
    assert fleet_run.rollout_plan(hostvars, ["a", "b", "c"], ["100%"], models) == expected
    # 2 of m at once (a number), and as a percentage (67 % of 3, rounded down).
    for bound in (2, "67%"):
        fleet = rollout_bounds.read_bounds(bound)
        assert fleet_run.rollout_plan(hostvars, ["a", "b", "c"], ["100%"], models, fleet=fleet) == {
            "order": ["a", "b", "c"], "serial": [3], "allowed": {"m": 2, "n": 1}, "refusal": ""}
    # Never all of them: 100 % of m's two replicas is one.
    two = [{"name": "m", "replicas": ["a/main", "b/main"]}, {"name": "n", "replicas": ["c/main"]}]
    assert fleet_run.rollout_plan(hostvars, ["a", "b", "c"], "100%", two,
                                  fleet=rollout_bounds.read_bounds("100%")) == {
        "order": ["a", "c", "b"], "serial": [2, 1], "allowed": {"m": 1, "n": 1}, "refusal": ""}
    # No gateway routes: the operator's batches.
    assert fleet_run.rollout_plan(hostvars, ["a", "b", "c"], [1, "100%"]) == {
        "order": ["a", "b", "c"], "serial": [1, 2], "allowed": {}, "refusal": ""}
    assert fleet_run.rollout_plan(hostvars, [], [1], models) == {
        "order": [], "serial": [], "allowed": {"m": 1, "n": 1}, "refusal": ""}


def placed(deployment, *names):
    return [{"name": name, "placement": {"deployment": deployment, "replica": index}}
            for index, name in enumerate(names)]


def test_a_deployments_own_bound_and_the_strictest_for_a_shared_model():
    """Deployment chat lets 2 of its 4 replicas out (50 %); code keeps the fleet's 25 %. A model served by replicas
    of both takes the strictest."""
    hostvars = {host: {**judged(f"chat-{index}"), "llama_server_placed_instances": placed("chat", *[
        f"chat-{n}" for n in range(4)])[index:index + 1]} for index, host in enumerate("abcd")}
    hostvars["e"] = {**judged("code-0"), "llama_server_placed_instances": placed("code", "code-0")}
    chat = [{"name": "chat", "replicas": [f"{host}/chat-{index}" for index, host in enumerate("abcd")]}]
    fleet = rollout_bounds.read_bounds()
    deployments = rollout_bounds.deployment_bounds([{"name": "chat", "max_unavailable": "50%"}, {"name": "code"}],
                                                   fleet)
    assert role_vars.rollout_bounds_of(None, None, [{"name": "chat", "max_unavailable": "50%"}, {"name": "code"}]) \
        == (fleet, deployments)
    plan = fleet_run.rollout_plan(hostvars, list("abcd"), ["100%"], chat, fleet=fleet, deployments=deployments)
    assert (plan["serial"], plan["allowed"]) == ([2, 2], {"chat": 2})
    shared = [{"name": "chat", "replicas": [*chat[0]["replicas"], "e/code-0"]}]
    plan = fleet_run.rollout_plan(hostvars, list("abcde"), ["100%"], shared, fleet=fleet, deployments=deployments)
    assert (plan["serial"], plan["allowed"]) == ([1, 1, 1, 1, 1], {"chat": 1})


def test_a_model_whose_bound_lets_none_out_is_refused():
    hostvars = {"a": judged("main"), "b": judged("main"), "c": judged("other")}
    models = [{"name": "m", "replicas": ["a/main", "b/main"]}, {"name": "n", "replicas": ["c/other"]}]
    plan = fleet_run.rollout_plan(hostvars, ["a", "b"], ["100%"], models, fleet=rollout_bounds.read_bounds(0, 1))
    assert plan["allowed"] == {"m": 0, "n": 0}
    assert plan["refusal"].startswith("model(s) m would restart, but llama_fleet_max_unavailable lets none of their "
                                      "replicas leave the gateways' rotation")
    # Nothing of n restarts: nothing refused.
    assert fleet_run.rollout_plan(hostvars, ["c"], ["100%"], models[:1], fleet=rollout_bounds.read_bounds(0, 1))[
        "refusal"] == ""


@pytest.mark.parametrize(
    ("gateways", "serial", "expected"),
    [
        # The hosts with work, in the run's order (the canary first); current (ok) and failed hosts stay out.
        ([], [1, "100%"], {"order": ["a", "b", "c"], "serial": [1, 2], "allowed": {}, "refusal": ""}),
        # The first gateway with routes speaks: one of m's two replicas (a, b) out at once.
        (["gw0", "gw1"], ["100%"], {"order": ["a", "c", "b"], "serial": [2, 1], "allowed": {"m": 1, "n": 1},
                                    "refusal": ""}),
        (["gw0"], "25%", {"order": ["a", "b", "c"], "serial": [1, 1, 1], "allowed": {}, "refusal": ""}),
    ],
)
def test_the_rollout_of_a_run(gateways, serial, expected):
    hostvars = {"a": judged("main"), "x": judged(status="ok"), "b": judged("main"),
                "y": judged("main", status="failed"), "c": judged("main"), "gw0": {}, "gw1": {"llama_gateway_models": [
                    {"name": "m", "replicas": ["a/main", "b/main"]}, {"name": "n", "replicas": ["c/main"]}]}}
    assert fleet_run.rollout(hostvars, ["a", "x", "b", "y", "c"], gateways, serial) == expected


def test_hosts_with_work_are_the_judged_ones_in_the_order_given():
    hostvars = {"a": judged(status="ok"), "b": judged(status="judged"), "c": judged(status="failed"),
                "d": judged(status="judged"), "e": {}}
    assert fleet_run.hosts_with_work(hostvars, ["d", "a", "b", "c", "e"]) == ["d", "b"]
    assert fleet_run.hosts_with_work(hostvars, []) == []
    assert fleet_run.hosts_with_work("a syntax check has no hostvars", ["a"]) == []


@pytest.mark.parametrize(("serial", "refused"), [
    ([1, "100%"], False), (3, False), ("25%", False), ([1, 5, "50%"], False),
    ("half", True), ([1, "most%"], True), ([1, None], True), ({"a": 1}, True),
])
def test_a_serial_is_read_as_the_rollout_reads_it(serial, refused):
    said = fleet_run.serial_refusal(serial)
    assert bool(said) is refused
    if refused:
        assert said.startswith(f"llama_fleet_serial {serial!r}: ")
        assert "accepted: a number, a percentage" in said


def test_the_gateways_to_configure_are_those_not_found_current():
    hostvars = {"g1": {"_llama_gateway_judgement": {"current": True}}, "g2": {"_llama_gateway_judgement": {
        "current": False, "why": ["its configuration differs"]}}, "g3": {}, "g4": {"_llama_gateway_judgement": {
            "skipped": True}}}
    assert fleet_run.gateways_to_configure(hostvars, ["g4", "g3", "g2", "g1"]) == ["g4", "g3", "g2"]
    assert fleet_run.gateways_to_configure("a syntax check has no hostvars", ["g1"]) == []


@pytest.mark.parametrize("pattern", ["llama_fleet", "llama_fleet:&rack1", ["a", "b"], "gpu[1:4]"])
def test_a_host_pattern_is_given_back_as_it_is(pattern):
    assert fleet_run.fleet_pattern(pattern) == pattern


@pytest.mark.parametrize("pattern", ["", "  ", None, [], ["a", ""], 3, {"hosts": "a"}])
def test_a_wrong_host_pattern_is_refused_naming_the_variable(pattern):
    with pytest.raises(ValueError, match=r"^llama_fleet_hosts: .* is not a host pattern; accepted: "):
        fleet_run.fleet_pattern(pattern)


def test_fleet_variables_give_the_options_the_task_does_not():
    """The playbook's variables of the options' names (not null), unless the task gives the option; a task without
    fleet_variables reads none of them."""
    hostvars = {"a": judged("main"), "b": judged("main")}
    variables = {"hostvars": hostvars, "llama_fleet_serial": "half", "llama_fleet_max_surge": None}
    read = actions.run_action(rollout_action, {"hosts": ["a", "b"], "fleet_variables": True}, task_vars=variables)[0]
    assert read["failed"] is True
    assert read["msg"].startswith("llama_fleet_serial 'half': ")
    given = actions.run_action(rollout_action, {"hosts": ["a", "b"], "fleet_variables": True, "serial": [2]},
                               task_vars=variables)[0]
    assert given["ansible_facts"]["llama_fleet_rollout"]["serial"] == [2]
    unread = actions.run_action(rollout_action, {"hosts": ["a", "b"]}, task_vars=variables)[0]
    assert unread["ansible_facts"]["llama_fleet_rollout"]["serial"] == [1, 1]
    bounded = actions.run_action(rollout_action, {"hosts": ["a", "b"], "fleet_variables": True},
                                 task_vars={**variables, "llama_fleet_serial": 1, "llama_fleet_max_unavailable": "x"})
    assert bounded[0]["msg"].startswith("llama_fleet_max_unavailable: 'x' is not a whole number")


def test_unfinished_hosts():
    hostvars = {"a": judged(status="ok"), "b": judged(status="failed"), "c": judged(status="started"),
                "d": judged(status="judged"), "e": {}}
    assert fleet_run.unfinished(hostvars, ["a", "b", "c", "d", "e"]) == ["c", "d", "e"]


def test_the_run_action_sets_its_fact(tmp_path):
    result, calls = actions.run_action(run_action, {"hosts": ["a", "b"], "inventory_hosts": ["a", "b", "z"],
                                                    "gateway_group": "gw",
                                                    "ledger_path": str(tmp_path / "fleet-ledger.json")},
                                       task_vars={"groups": {"gw": ["g1"], "other": ["o"]}})
    assert calls == []
    # With the rollout reset: a run whose hosts have no work never reads an earlier run's order (fact cache).
    assert (result["changed"], result["ansible_facts"]) == (False, {"llama_fleet_run": {
        "hosts": ["a", "b"], "inventory_hosts": ["a", "b", "z"], "gateways": ["g1"], "refusal": "", "cordoned": [],
        "stopping": [], "cordon": [], "uncordon": []},
        "llama_fleet_rollout": {"order": [], "serial": [1], "allowed": {}, "refusal": ""}})
    no_group = actions.run_action(run_action, {"hosts": ["a"], "inventory_hosts": ["a"], "gateway_group": "gw"},
                                  task_vars={"groups": {}})[0]
    assert no_group["ansible_facts"]["llama_fleet_run"]["gateways"] == []
    # A serial the rollout could not read is refused here, whether or not a host has work.
    bad = actions.run_action(run_action, {"hosts": ["a"], "inventory_hosts": ["a"], "gateway_group": "gw",
                                          "serial": "sometimes", "ledger_path": str(tmp_path / "fleet-ledger.json")},
                             task_vars={"groups": {}})[0]
    assert bad["failed"] is True
    assert bad["msg"].startswith("llama_fleet_serial 'sometimes': ")


LEDGER_OF_Z = json.dumps({"kind": "llamafleet placement ledger", "version": 1, "fleet": "llama_fleet",
                          "hosts": {"z": {"cordoned": True, "placed": []}}})


@pytest.mark.parametrize(("args", "hostvars", "ledger", "says", "cordoned"), [
    pytest.param({"unreachable": "retry"}, {}, None, "llama_fleet_unreachable: 'retry' is not one of replace, keep",
                 [], id="unknown-policy"),
    pytest.param({}, {"z": {"llama_fleet_cordoned": "soon"}}, None,
                 "z: llama_fleet_cordoned: 'soon' is not a boolean (true or false)", [],
                 id="cordon-outside-the-limit-too"),
    pytest.param({}, {}, "not json", "fleet-ledger.json cannot be this fleet's placement ledger: it is not JSON", [],
                 id="damaged-ledger"),
    pytest.param({"cordon": ["q"]}, {}, None, "llama_fleet_cordon/llama_fleet_uncordon: q is not a host of the fleet",
                 [], id="a-request-for-a-stranger"),
    pytest.param({"cordon": ["a"]}, {"a": {"llama_fleet_cordoned": False}}, None,
                 "a: llama_fleet_cordoned in the inventory says otherwise than this maintenance run", [],
                 id="a-request-the-inventory-overrides"),
    pytest.param({"unreachable": "keep"}, {"a": {"llama_fleet_cordoned": "yes"}}, None, "", ["a"], id="all-good"),
    pytest.param({"maintenance": True}, {}, None, "a maintenance run needs llama_fleet_cordon or "
                 "llama_fleet_uncordon", [], id="maintenance-without-a-request"),
    pytest.param({"maintenance": True, "uncordon": "a"}, {}, None, "", [], id="maintenance-a-host-as-text"),
    pytest.param({}, {}, LEDGER_OF_Z, "", ["z"], id="the-ledgers-record"),
    pytest.param({"uncordon": ["z"]}, {}, LEDGER_OF_Z, "", [], id="uncordon-wins-over-the-record"),
    pytest.param({"cordon": ["a"]}, {"z": {"llama_fleet_cordoned": False}}, LEDGER_OF_Z, "", ["a"],
                 id="the-inventory-wins-over-the-record"),
])
def test_the_run_action_checks_the_fleet_settings_and_finds_the_cordons(tmp_path, *, args, hostvars, ledger, says,
                                                                        cordoned):
    path = tmp_path / "fleet-ledger.json"
    if ledger is not None:
        path.write_text(ledger)
    result = actions.run_action(run_action, {"hosts": ["a"], "inventory_hosts": ["a", "z"], "gateway_group": "gw",
                                             "ledger_path": str(path), "fleet_name": "llama_fleet", **args},
                                task_vars={"groups": {}, "hostvars": hostvars})[0]
    fact = result["ansible_facts"]["llama_fleet_run"]
    assert (says in fact["refusal"]) if says else fact["refusal"] == ""
    if not says:
        assert fact["cordoned"] == cordoned
    if ledger is not None:
        assert path.read_text() == ledger  # never rewritten here


@pytest.mark.parametrize(("args", "hostvars", "says", "stopping"), [
    pytest.param({}, {"z": {"llama_fleet_cordoned_instances": "halt"}},
                 "z: llama_fleet_cordoned_instances: 'halt' is not one of keep, stop", [], id="unknown-value"),
    pytest.param({}, {"a": {"llama_fleet_cordoned_instances": ["stop"]}},
                 "a: llama_fleet_cordoned_instances: ['stop'] is not one of keep, stop", [], id="not-text"),
    pytest.param({}, {"a": {"llama_fleet_cordoned_instances": "stop"}}, "", [], id="stop-but-not-cordoned"),
    pytest.param({"cordon": ["a"]}, {"a": {"llama_fleet_cordoned_instances": "stop"}}, "", ["a"],
                 id="stop-a-cordoned-host"),
    pytest.param({}, {"a": {"llama_fleet_cordoned": True},
                      "z": {"llama_fleet_cordoned": True, "llama_fleet_cordoned_instances": "keep"}}, "", [],
                 id="keep-is-the-default"),
    pytest.param({}, {"z": {"llama_fleet_cordoned": True, "llama_fleet_cordoned_instances": "stop"}}, "", ["z"],
                 id="a-host-outside-the-limit-too"),
])
def test_the_run_action_says_which_cordoned_hosts_stop_their_instances(tmp_path, *, args, hostvars, says, stopping):
    result = actions.run_action(run_action, {"hosts": ["a"], "inventory_hosts": ["a", "z"], "gateway_group": "gw",
                                             "ledger_path": str(tmp_path / "fleet-ledger.json"), **args},
                                task_vars={"groups": {}, "hostvars": hostvars})[0]
    fact = result["ansible_facts"]["llama_fleet_run"]
    assert (says in fact["refusal"]) if says else fact["refusal"] == ""
    assert fact["stopping"] == stopping


def test_gateways_keep_the_hosts_this_run_did_not_read_or_finish():
    hostvars = {"a": {"llama_fleet_status": "ok", "llama_server_report": []},
                "b": {"llama_fleet_status": "judged", "llama_server_report": []},
                "c": {"llama_fleet_status": "failed", "llama_server_report": []},
                "lost": {}, "outside": {}}
    assert fleet_run.unfinished(hostvars, ["a", "b", "c"]) == ["b"]
    assert fleet_run.unfinished(hostvars, ["a", "b", "c"], ["a", "b", "c", "lost", "outside"]) == [
        "b", "lost", "outside"]


def test_the_gateways_are_configured_before_removals_only_when_a_host_removes():
    hostvars = {"a": {"_llama_fleet_removals": ["tiny-1"], "llama_fleet_status": "ok"},
                "b": {"_llama_fleet_removals": [], "llama_fleet_status": "ok"},
                "c": {"_llama_fleet_removals": ["tiny-2"], "llama_fleet_status": "failed"}}
    assert fleet_run.removal_hosts(hostvars, ["a", "b", "c"]) == ["a"]
    assert fleet_run.gateways_before_removals(hostvars, ["a", "b", "c"], ["gw1", "gw2"]) == ["gw1", "gw2"]
    assert fleet_run.gateways_before_removals(hostvars, ["b", "c"], ["gw1"]) == []


@pytest.mark.parametrize(("order", "hosts", "expected"), [
    ([], ["b", "c"], []),  # nothing rolled out, nothing removed: the gateways were configured from what runs
    (["b"], ["b", "c"], ["gw1", "gw2"]),  # a host rolled out
    ([], ["a", "b"], ["gw1", "gw2"]),  # a host removes replicas
    ([], [], []),
])
def test_the_gateways_are_configured_after_the_rollout_only_when_a_host_changed(order, hosts, expected):
    hostvars = {"a": {"_llama_fleet_removals": ["tiny-1"], "llama_fleet_status": "ok"},
                "b": {"_llama_fleet_removals": [], "llama_fleet_status": "ok"},
                "c": {"_llama_fleet_removals": ["tiny-2"], "llama_fleet_status": "failed"}}
    assert fleet_run.gateways_after_rollout(hostvars, order, hosts, ["gw1", "gw2"]) == expected
    assert fleet_run.gateways_after_rollout("no hostvars", order, hosts, ["gw1"]) == []


def test_the_rollout_action_sets_its_fact_or_names_a_bad_serial():
    hostvars = {"a": judged("main"), "b": judged("main")}
    result = actions.run_action(rollout_action, {"hosts": ["a", "b"], "serial": [1, "100%"]},
                                task_vars={"hostvars": hostvars})[0]
    assert result["ansible_facts"] == {"llama_fleet_rollout": {"order": ["a", "b"], "serial": [1, 1], "allowed": {},
                                                               "refusal": ""}}
    bad = actions.run_action(rollout_action, {"hosts": ["a", "b"], "serial": "half"},
                             task_vars={"hostvars": hostvars})[0]
    assert bad["failed"] is True
    assert bad["msg"].startswith("llama_fleet_serial 'half': ")
    assert "accepted: a number, a percentage" in bad["msg"]


@pytest.mark.parametrize(("args", "says"), [
    ({"max_unavailable": "most"}, "llama_fleet_max_unavailable: 'most' is not a whole number"),
    ({"max_unavailable": 0, "max_surge": "0%"}, "llama_fleet_max_unavailable is 0 and llama_fleet_max_surge is 0"),
    ({"deployments": [{"name": "chat", "max_surge": "150%"}]},
     "llama_fleet_deployments[0] (chat): max_surge: '150%' is not"),
])
def test_the_rollout_action_refuses_bad_bounds(args, says):
    result = actions.run_action(rollout_action, {"hosts": ["a"], **args},
                                task_vars={"hostvars": {"a": judged("main")}})[0]
    assert result["failed"] is True
    assert says in result["msg"]


@pytest.mark.parametrize(("args", "says"), [
    ({"max_unavailable": -1}, "llama_fleet_max_unavailable: -1 is not a whole number from 0 to 10000"),
    ({"max_surge": "some"}, "llama_fleet_max_surge: 'some' is not"),
    ({"max_unavailable": "0", "max_surge": 0}, "llama_fleet_max_unavailable is 0 and llama_fleet_max_surge is 0"),
    ({"deployments": [{"name": "chat", "max_unavailable": "0%"}]},
     "llama_fleet_deployments[0] (chat): max_unavailable is 0 and llama_fleet_max_surge is 0"),
    ({"max_unavailable": "50%", "max_surge": 1, "deployments": [{"name": "chat", "max_unavailable": 0}]}, ""),
])
def test_the_run_action_refuses_bad_bounds_before_anything_changes(tmp_path, args, says):
    result = actions.run_action(run_action, {"hosts": ["a"], "inventory_hosts": ["a"], "gateway_group": "gw",
                                             "ledger_path": str(tmp_path / "fleet-ledger.json"), **args},
                                task_vars={"groups": {}})[0]
    refusal = result["ansible_facts"]["llama_fleet_run"]["refusal"]
    assert says in refusal if says else refusal == ""
