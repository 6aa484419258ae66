"""The deploy playbook is reachable both ways: by path from a checkout, and by FQCN from the collection."""

import json
import os
import subprocess
import sys

import pytest
import yaml

import conftest

BIN = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")


@pytest.mark.parametrize("playbook", ["playbooks/deploy-llm.yml", "llamafleet.llamacpp.deploy_llm"])
def test_the_deploy_playbook_loads(playbook):
    root = os.path.dirname(os.path.abspath(conftest.__file__))
    proc = subprocess.run(
        [BIN, "--syntax-check", "-i", "localhost,", playbook], cwd=root, capture_output=True, text=True,
        check=False, timeout=120, env={**os.environ, "ANSIBLE_COLLECTIONS_PATH": conftest.collection_path()},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "deploy_llm.yml" in proc.stdout or "deploy-llm.yml" in proc.stdout


@pytest.mark.parametrize("pattern", ["", [], 3])
def test_a_wrong_host_pattern_stops_the_run_before_any_task(pattern):
    """An empty llama_fleet_hosts would make every play match nothing, and the run end in silence: refused."""
    root = os.path.dirname(os.path.abspath(conftest.__file__))
    proc = subprocess.run(
        [BIN, "-i", "localhost,", "playbooks/deploy-llm.yml", "-e", json.dumps({"llama_fleet_hosts": pattern})],
        cwd=root,
        capture_output=True, text=True, check=False, timeout=120,
        env={**os.environ, "ANSIBLE_COLLECTIONS_PATH": conftest.collection_path(), "ANSIBLE_NOCOLOR": "1"})
    assert proc.returncode != 0, proc.stdout + proc.stderr
    assert "llama_fleet_hosts: " in proc.stdout + proc.stderr
    assert "is not a host pattern" in proc.stdout + proc.stderr
    assert "TASK [" not in proc.stdout


def _rollout_batches(tmp_path, hosts: dict, gateways: dict | None = None) -> list[list[str]]:
    """The deploy playbook's own run step (fleet_run), its rollout play (fleet_rollout) and its deploy play's hosts
    and serial, on local hosts whose judgements arrive in reverse order (the later hosts sleep less): the batches it
    runs."""
    root = os.path.dirname(os.path.abspath(conftest.__file__))
    with open(os.path.join(root, "playbooks", "deploy_llm.yml"), encoding="utf-8") as handle:
        plays = yaml.safe_load(handle)
    judge = next(play for play in plays if play["name"] == "Judge the fleet against its plans")
    run = next(task for task in judge["tasks"] if task["name"] == "Say which hosts this run holds")
    order = next(play for play in plays if play["name"] == "Order the rollout")
    deploy = next(play for play in plays if play["name"] == "Deploy llama-server")
    defaults = [os.path.join(root, "playbooks", "vars", "fleet.yml")]
    harness = [
        {"name": "Judge", "hosts": judge["hosts"], "gather_facts": False, "vars_files": defaults,
         "vars": judge["vars"], "tasks": [
             run,
             # The status is templated in each host's worker: the sleep orders the judgements themselves.
             {"ansible.builtin.set_fact": {
                 "llama_fleet_status": "{{ lookup('ansible.builtin.pipe', 'sleep ' ~ delay) }}{{ status }}"}}]},
        {**{key: order[key] for key in ("name", "hosts", "gather_facts", "vars", "tasks")}, "vars_files": defaults},
        {"name": "Roll out", "hosts": deploy["hosts"], "serial": deploy["serial"], "gather_facts": False,
         "vars_files": defaults, "vars": judge["vars"],
         "tasks": [{"ansible.builtin.debug": {"msg": "batch {{ ansible_play_batch | join(',') }}"}, "run_once": True}]},
    ]
    (tmp_path / "play.yml").write_text(yaml.safe_dump(harness))
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    inventory = {"all": {"children": {"llama_fleet": {"hosts": hosts, "vars": local},
                                      "llama_fleet_gateway": {"hosts": gateways or {}, "vars": local}}}}
    (tmp_path / "inventory.yml").write_text(yaml.safe_dump(inventory))
    proc = subprocess.run(
        [BIN, "-i", str(tmp_path / "inventory.yml"), "-f", "4", str(tmp_path / "play.yml")], cwd=tmp_path,
        capture_output=True, text=True, check=False, timeout=120,
        env={**os.environ, "ANSIBLE_COLLECTIONS_PATH": conftest.collection_path(), "ANSIBLE_NOCOLOR": "1"},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return [line.split("batch ")[1].rstrip('"').split(",") for line in proc.stdout.splitlines()
            if '"msg": "batch ' in line]


def test_the_rollout_takes_its_hosts_in_inventory_order(tmp_path):
    """The canary is the first host of the inventory that has work, whichever host's judgement came back first
    (in the order the judgements arrived, h4 would be the canary); one host has no work."""
    batches = _rollout_batches(tmp_path, {
        "h1": {"delay": 3, "status": "judged"}, "h2": {"delay": 2, "status": "ok"},
        "h3": {"delay": 1, "status": "judged"}, "h4": {"delay": 0, "status": "judged"}})
    assert batches == [["h1"], ["h3", "h4"]]


def test_a_run_with_no_work_orders_no_rollout(tmp_path):
    """No host has work: the play that orders the rollout matches no host, and the rollout play none either (the run
    reads the empty rollout fleet_run set)."""
    assert _rollout_batches(tmp_path, {"h1": {"delay": 0, "status": "ok"}, "h2": {"delay": 0, "status": "ok"}}) == []


def _host(delay):
    return {"delay": delay, "status": "judged",
            "_llama_server_judgement": {"current": False, "work": {"all": False, "instances": ["main"]}}}


def test_with_a_gateway_no_batch_restarts_every_replica_of_a_model(tmp_path):
    """Two replicas of "m" (h2, h3) and two of "n" (h1, h4) in the gateway's rotation: after the canary h1, h2 and
    h4 go together (one replica of each model), and h3 waits for the next batch."""
    hosts = {"h1": _host(3), "h2": _host(2), "h3": _host(1), "h4": _host(0)}
    models = [{"name": "m", "replicas": ["h2/main", "h3/main"]}, {"name": "n", "replicas": ["h1/main", "h4/main"]}]
    assert _rollout_batches(tmp_path, hosts, {"gw": {"llama_gateway_models": models}}) == [
        ["h1"], ["h2", "h4"], ["h3"]]
    # Without a gateway: the operator's batches as they are.
    assert _rollout_batches(tmp_path, hosts) == [["h1"], ["h2", "h3", "h4"]]


def test_the_placement_playbook_places_a_fleet_from_a_file_without_any_host(tmp_path):
    """playbooks/place_fleet.yml on its example, and on a file of the operator's: printed, and written as JSON."""
    root = os.path.dirname(os.path.abspath(conftest.__file__))
    env = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": conftest.collection_path(), "ANSIBLE_NOCOLOR": "1"}
    example = subprocess.run([BIN, "playbooks/place_fleet.yml"], cwd=root, capture_output=True, text=True,
                             check=False, timeout=120, env=env)
    assert example.returncode == 0, example.stdout + example.stderr
    assert "qwen3-32b                      1  gpu2" in example.stdout
    fleet = tmp_path / "fleet.yml"
    fleet.write_text(yaml.safe_dump({
        "deployments": [{"name": "chat", "replicas": 2, "memory_mib": 5000}],
        "hosts": [{"name": "a", "ram_free_mib": 9000}, {"name": "b", "ram_free_mib": 5000}]}))
    out = tmp_path / "placement.json"
    mine = subprocess.run([BIN, "playbooks/place_fleet.yml", "-e", f"llama_fleet_file={fleet}", "-e",
                           f"llama_fleet_placement_path={out}"], cwd=root, capture_output=True, text=True,
                          check=False, timeout=120, env=env)
    assert mine.returncode == 0, mine.stdout + mine.stderr
    result = json.loads(out.read_text())
    assert [(p["deployment"], p["host"]) for p in result["placements"]] == [("chat", "a")]
    assert result["unplaced"][0]["why"].startswith("needs 5000 MiB of RAM; the best candidate, b, has 3976 MiB")
    # Relative paths, as an operator types them: relative to where the command runs, not to the playbook.
    relative = subprocess.run([BIN, os.path.join(root, "playbooks/place_fleet.yml"), "-e", "llama_fleet_file=fleet.yml",
                               "-e", "llama_fleet_placement_path=relative.json"], cwd=tmp_path, capture_output=True,
                              text=True, check=False, timeout=120, env=env)
    assert relative.returncode == 0, relative.stdout + relative.stderr
    assert json.loads((tmp_path / "relative.json").read_text()) == result


def test_a_refused_fleet_setting_fails_every_host_with_one_task(tmp_path):
    """The judge play's first task (fleet_run, run once) on three local hosts with a bound that is a word, a serial
    that is a word, then a scrape targets file that is not the collection's: the run fails naming it, once, and no
    host reaches the next task or play."""
    root = os.path.dirname(os.path.abspath(conftest.__file__))
    with open(os.path.join(root, "playbooks", "deploy_llm.yml"), encoding="utf-8") as handle:
        plays = yaml.safe_load(handle)
    judge = next(play for play in plays if play["name"] == "Judge the fleet against its plans")
    names = ["Say which hosts this run holds"]
    tasks = [next(task for task in judge["tasks"] if task["name"] == name) for name in names]
    harness = [{"name": "Judge", "hosts": judge["hosts"], "gather_facts": False,
                "vars_files": [os.path.join(root, "playbooks", "vars", "fleet.yml")], "vars": judge["vars"],
                "tasks": [*tasks, {"name": "Reached",
                                   "ansible.builtin.debug": {"msg": "reached {{ inventory_hostname }}"}}]},
               {"name": "Later", "hosts": "llama_fleet", "gather_facts": False,
                "tasks": [{"ansible.builtin.debug": {"msg": "later {{ inventory_hostname }}"}}]}]
    (tmp_path / "play.yml").write_text(yaml.safe_dump(harness))
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    inventory = {"all": {"children": {"llama_fleet": {"hosts": {"h1": {}, "h2": {}, "h3": {}}, "vars": local}}}}
    (tmp_path / "inventory.yml").write_text(yaml.safe_dump(inventory))
    foreign = tmp_path / "targets.json"
    foreign.write_text('[{"targets": ["node:9100"], "labels": {"job": "node"}}]\n')
    for extra, named in ((["-e", "llama_fleet_max_unavailable=some"], "llama_fleet_max_unavailable"),
                         (["-e", "llama_fleet_serial=sometimes"], "llama_fleet_serial 'sometimes'"),
                         (["-e", f"llama_fleet_metrics_targets_path={foreign}"], "was not written by this collection")):
        proc = subprocess.run(
            [BIN, "-i", str(tmp_path / "inventory.yml"), str(tmp_path / "play.yml"), *extra],
            cwd=tmp_path, capture_output=True, text=True, check=False, timeout=120,
            env={**os.environ, "ANSIBLE_COLLECTIONS_PATH": conftest.collection_path(), "ANSIBLE_NOCOLOR": "1"})
        assert proc.returncode == 2, proc.stdout + proc.stderr
        assert named in proc.stdout
        assert proc.stdout.count("fatal: [") == 1  # one task, not one per host
        assert "reached " not in proc.stdout
        assert "later " not in proc.stdout
