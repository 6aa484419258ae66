"""The deploy playbook is reachable both ways: by path from a checkout, and by FQCN from the collection."""

import os
import subprocess
import sys

import pytest

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
