"""The deploy playbook is reachable both ways: by path from a checkout, and by FQCN from the collection."""

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


def test_the_rollout_takes_its_hosts_in_inventory_order(tmp_path):
    """The canary is the first host of the inventory that has work, whichever host's judgement came back first.

    The deploy play's own `hosts` expression runs after a group_by whose results arrive in reverse order (the
    later hosts sleep less); one host has no work. Taken from the group as filled, h4 would be the canary.
    """
    root = os.path.dirname(os.path.abspath(conftest.__file__))
    with open(os.path.join(root, "playbooks", "deploy_llm.yml"), encoding="utf-8") as handle:
        plays = yaml.safe_load(handle)
    deploy = next(play for play in plays if play["name"] == "Deploy llama-server")
    harness = [
        {"name": "Judge", "hosts": "llama_fleet", "gather_facts": False, "tasks": [
            # The key is templated in each host's worker: the sleep orders the group_by results themselves.
            {"ansible.builtin.group_by": {
                "key": "{{ lookup('ansible.builtin.pipe', 'sleep ' ~ delay) }}{{ group }}"}}]},
        {"name": "Roll out", "hosts": deploy["hosts"], "serial": 1, "gather_facts": False, "tasks": [
            {"ansible.builtin.debug": {"msg": "batch {{ inventory_hostname }}"}}]},
    ]
    (tmp_path / "play.yml").write_text(yaml.safe_dump(harness))
    (tmp_path / "inventory.ini").write_text(
        "[llama_fleet]\n"
        "h1 delay=3 group=_llama_fleet_rollout\n"
        "h2 delay=2 group=_llama_fleet_current\n"
        "h3 delay=1 group=_llama_fleet_rollout\n"
        "h4 delay=0 group=_llama_fleet_rollout\n"
        "[llama_fleet:vars]\nansible_connection=local\n"
        f"ansible_python_interpreter={sys.executable}\n"
    )
    proc = subprocess.run(
        [BIN, "-i", str(tmp_path / "inventory.ini"), "-f", "4", str(tmp_path / "play.yml")], cwd=tmp_path,
        capture_output=True, text=True, check=False, timeout=120,
        env={**os.environ, "ANSIBLE_COLLECTIONS_PATH": conftest.collection_path(), "ANSIBLE_NOCOLOR": "1"},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    batches = [line.split("batch ")[1].rstrip('"') for line in proc.stdout.splitlines() if '"msg": "batch ' in line]
    assert batches == ["h1", "h3", "h4"]
