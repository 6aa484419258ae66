"""The fleet's Prometheus file_sd groups (scrape_targets.py): who is listed, with which labels, and what is kept."""

import json

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._gateway.scrape_targets import (
    TargetsFileError,
    engine_group,
    gateway_group,
    read_previous,
    scrape_targets,
    targets_text,
)

ROW = {"instance": "main", "state": "deployed", "host": "0.0.0.0", "port": "8080", "slots": 2,
       "model_name": "qwen3-8b", "runs_plan": True, "metrics": True}
PRESET = {"preset": "qwen", "version": "0123456789ab"}
LABELS = {"llamafleet": "engine", "host": "gpu1", "instance": "main", "model": "qwen3-8b", "preset": "qwen",
          "preset_version": "0123456789ab"}


@pytest.mark.parametrize(
    ("row", "target", "note"),
    [
        pytest.param({}, "10.0.0.11:8080", "", id="every-address-is-the-host-address"),
        pytest.param({"host": "10.0.0.12"}, "10.0.0.12:8080", "", id="its-own-address"),
        pytest.param({"host": "fd00::12"}, "[fd00::12]:8080", "", id="ipv6-in-brackets"),
        pytest.param({"state": "previewed"}, "10.0.0.11:8080", "", id="check-mode-runs-its-plan"),
        pytest.param({"metrics": False}, None, "", id="metrics-off-says-nothing"),
        pytest.param({"host": "127.0.0.1"}, None,
                     "gpu1/main is left out of the scrape targets: it listens on 127.0.0.1 only, which no "
                     "Prometheus on another host reaches", id="loopback"),
        pytest.param({"slots": 0}, None, "gpu1/main is left out of the scrape targets: its engine does not answer "
                     "/props (not started yet, or loading)", id="no-props"),
        pytest.param({"port": "99999"}, None, "gpu1/main: its port '99999' is not a TCP port", id="bad-port"),
    ],
)
def test_engine_group(row, target, note):
    group, why = engine_group("gpu1", "10.0.0.11", {**ROW, **row}, PRESET)
    assert why == note
    if target is None:
        assert group is None
    else:
        assert group == {"targets": [target], "labels": LABELS}


@pytest.mark.parametrize(
    ("url", "group", "note"),
    [
        pytest.param("", None, "", id="no-exporter"),
        pytest.param("http://10.0.0.5:8405/metrics",
                     {"targets": ["10.0.0.5:8405"], "labels": {"llamafleet": "gateway", "host": "gw"}}, "",
                     id="http"),
        pytest.param("https://gw.example:8405/metrics",
                     {"targets": ["gw.example:8405"],
                      "labels": {"llamafleet": "gateway", "host": "gw", "__scheme__": "https"}}, "", id="https"),
        pytest.param("http://[fd00::5]:8405/metrics",
                     {"targets": ["[fd00::5]:8405"], "labels": {"llamafleet": "gateway", "host": "gw"}}, "",
                     id="ipv6"),
        pytest.param("ftp://gw:21/metrics", None, "gw: its metrics URL 'ftp://gw:21/metrics' is not "
                     "http(s)://ADDRESS:PORT/PATH", id="not-http"),
        pytest.param("http://gw/metrics", None, "gw: its metrics URL 'http://gw/metrics' is not "
                     "http(s)://ADDRESS:PORT/PATH", id="no-port"),
    ],
)
def test_gateway_group(url, group, note):
    assert gateway_group("gw", url) == (group, note)


def _host(name, address, report, presets=None):
    return {"name": name, "address": address, "report": report, "presets": presets or {"main": PRESET}}


def test_the_run_lists_every_engine_and_gateway_sorted():
    found = scrape_targets(
        [_host("gpu2", "10.0.0.12", [ROW]), _host("gpu1", "10.0.0.11", [ROW, {**ROW, "instance": "side"}])],
        [{"name": "gw", "metrics_url": "http://10.0.0.5:8405/metrics"}, {"name": "gw2", "metrics_url": ""}])
    assert [(g["labels"]["llamafleet"], g["labels"]["host"], g["labels"].get("instance"))
            for g in found["groups"]] == [("engine", "gpu1", "main"), ("engine", "gpu1", "side"),
                                          ("engine", "gpu2", "main"), ("gateway", "gw", None)]
    # An instance without a preset entry (placed by a module alone) has empty preset labels.
    assert found["groups"][1]["labels"]["preset"] == ""
    assert (found["notes"], found["kept"]) == ([], [])


def test_a_host_without_a_report_keeps_its_groups_while_it_is_in_the_inventory():
    old = scrape_targets([_host("gpu1", "10.0.0.11", [ROW]), _host("gpu2", "10.0.0.12", [ROW]),
                          _host("gone", "10.0.0.13", [ROW])],
                         [{"name": "gw", "metrics_url": "http://10.0.0.5:8405/metrics"}])["groups"]
    found = scrape_targets([_host("gpu1", "10.0.0.11", [{**ROW, "state": "absent", "runs_plan": False}]),
                            _host("gpu2", "10.0.0.12", None)],
                           [{"name": "gw", "metrics_url": None}], old, inventory=["gpu1", "gpu2", "gw"])
    # gpu1 reported: its removed instance goes. gpu2 (no report) and gw (did not run) keep theirs. "gone" left the
    # inventory: its group goes.
    assert [(g["labels"]["host"], g["targets"]) for g in found["groups"]] == [
        ("gpu2", ["10.0.0.12:8080"]), ("gw", ["10.0.0.5:8405"])]
    assert found["kept"] == ["gpu2", "gw"]


def test_an_instance_that_does_not_run_its_plan_keeps_its_previous_target():
    old = scrape_targets([_host("gpu1", "10.0.0.11", [ROW, {**ROW, "instance": "side", "port": "8081"}])],
                         [])["groups"]
    rolled_back = {**ROW, "state": "failed", "runs_plan": False, "metrics": True, "rolled_back": True}
    removed = {**ROW, "instance": "side", "state": "absent", "runs_plan": False}
    found = scrape_targets([_host("gpu1", "10.0.0.11", [rolled_back, removed])], [], old, inventory=["gpu1"])
    assert found["groups"] == old[:1]
    assert found["kept"] == ["gpu1"]
    # With no previous file, nothing is known of what it runs: it is not listed.
    assert scrape_targets([_host("gpu1", "10.0.0.11", [rolled_back])], [])["groups"] == []


def test_a_replica_to_remove_that_no_row_names_keeps_its_target():
    # A surge renewal cut short: the new copy "pool-1" runs its plan, the old copy "pool-1-b" was to be removed
    # (the host's share) but the rollout stopped before the removals, so no row names it: it still runs.
    old = scrape_targets([_host("gpu1", "10.0.0.11", [ROW, {**ROW, "instance": "pool-1-b", "port": "8082"}])],
                         [])["groups"]
    copy = {**ROW, "instance": "pool-1", "port": "8083"}
    removing = {**_host("gpu1", "10.0.0.11", [ROW, copy]), "removing": ["pool-1-b"]}
    found = scrape_targets([removing], [], old, inventory=["gpu1"])
    assert [(g["labels"]["instance"], g["targets"]) for g in found["groups"]] == [
        ("main", ["10.0.0.11:8080"]), ("pool-1", ["10.0.0.11:8083"]), ("pool-1-b", ["10.0.0.11:8082"])]
    assert found["kept"] == ["gpu1"]
    # Once a row names it (removed), it goes.
    removed = {**ROW, "instance": "pool-1-b", "state": "absent", "runs_plan": False}
    assert [g["labels"]["instance"] for g in scrape_targets(
        [{**removing, "report": [ROW, copy, removed]}], [], found["groups"], inventory=["gpu1"])["groups"]] == [
        "main", "pool-1"]
    # Any other instance that no row names has no target: the report says what runs (a host made again, a file
    # of another fleet).
    assert scrape_targets([_host("gpu1", "10.0.0.11", [ROW, copy])], [], old, inventory=["gpu1"])["groups"] == [
        found["groups"][0], found["groups"][1]]


def test_a_stopped_instance_has_no_target_and_keeps_none():
    old = scrape_targets([_host("gpu1", "10.0.0.11", [ROW, {**ROW, "instance": "side", "port": "8081"}])],
                         [])["groups"]
    stopped = {"instance": "side", "unit": "llama-server-side.service", "state": "stopped", "changed": True,
               "restarted": False}
    found = scrape_targets([_host("gpu1", "10.0.0.11", [ROW, stopped])], [], old, inventory=["gpu1"])
    assert [g["targets"] for g in found["groups"]] == [["10.0.0.11:8080"]]
    assert found["kept"] == []


def test_the_text_is_stable_and_reads_back():
    groups = scrape_targets([_host("gpu1", "10.0.0.11", [ROW])], [])["groups"]
    text = targets_text(groups)
    assert text == targets_text(json.loads(text))
    assert read_previous(text) == groups


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        pytest.param("not json", "it is not JSON", id="not-json"),
        pytest.param('{"targets": []}', "it holds a dict", id="not-a-list"),
        pytest.param('[{"targets": ["a:1"], "labels": {"job": "node"}}]', "its group 0 is not one this collection",
                     id="someone-elses"),
        pytest.param('[{"targets": ["a:1"], "labels": {"llamafleet": "engine", "port": 1}}]', "its group 0",
                     id="label-not-text"),
        pytest.param('[{"targets": "a:1", "labels": {"llamafleet": "engine"}}]', "its group 0", id="targets-text"),
        pytest.param('["a:1"]', "its group 0", id="bare-target"),
    ],
)
def test_a_file_this_collection_did_not_write_is_refused(text, problem):
    with pytest.raises(TargetsFileError) as err:
        read_previous(text)
    assert problem in str(err.value)


@pytest.mark.parametrize("text", ["", "  \n", None, "[]\n"])
def test_no_file_or_an_empty_one_has_no_groups(text):
    assert read_previous(text) == []


ROUTER_ROW = {**ROW, "instance": "team", "slots": 0, "model_name": "", "router_autoload": True,
              "router_models": [{"name": "chat", "status": "loaded", "slots": 2, "metrics": True, "failed": False},
                                {"name": "code", "status": "unloaded", "slots": 1, "metrics": True, "failed": False},
                                {"name": "quiet", "status": "unloaded", "slots": 1, "metrics": False},
                                {"name": "broken", "status": "unloaded", "slots": 1, "metrics": True,
                                 "failed": True}]}


def test_a_router_has_one_target_per_model_that_never_loads_it():
    found = scrape_targets([_host("gpu1", "10.0.0.11", [ROUTER_ROW])], [])
    groups = {group["labels"]["instance"]: group for group in found["groups"]}
    assert sorted(groups) == ["team/chat", "team/code"]
    for name in ("chat", "code"):
        group = groups[f"team/{name}"]
        assert group["targets"] == ["10.0.0.11:8080"]
        # Prometheus sends each __param_ label as a query parameter: /metrics?model=<name>&autoload=false.
        assert (group["labels"]["model"], group["labels"]["__param_model"],
                group["labels"]["__param_autoload"]) == (name, name, "false")
    assert found["notes"] == ["gpu1/team/broken is left out of the scrape targets: its child exited in error (the "
                              "router's /v1/models says failed)"]
