"""The gateway role reads the fleet once for all the play's gateways (llama_gateway_one_fleet, run_once), through
ansible-playbook: a fleet it cannot route fails every gateway with the reason, not the first one alone."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.integration.conftest import COLLECTIONS

PLAY = """\
- name: Two gateways of one fleet
  hosts: gateways
  gather_facts: false
  roles:
    - role: llamafleet.llamacpp.llama_gateway
      vars:
        llama_gateway_fleet_hosts: [fleet1]
        llama_gateway_install: false
        llama_gateway_one_fleet: {one_fleet}
"""


@pytest.mark.parametrize("one_fleet", [True, False])
def test_a_fleet_that_cannot_be_routed_fails_every_gateway_with_why(tmp_path, one_fleet):
    (tmp_path / "play.yml").write_text(PLAY.format(one_fleet=json.dumps(one_fleet)))
    # fleet1 was neither judged nor deployed in this run: nothing says what runs there.
    (tmp_path / "inventory.ini").write_text(textwrap.dedent(f"""\
        [gateways]
        gw1 ansible_connection=local ansible_python_interpreter={sys.executable}
        gw2 ansible_connection=local ansible_python_interpreter={sys.executable}
        [llama_fleet]
        fleet1 ansible_connection=local
        """))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(COLLECTIONS), ANSIBLE_NOCOLOR="1",
               ANSIBLE_RETRY_FILES_ENABLED="0", ANSIBLE_LOCAL_TEMP=str(tmp_path / "local"),
               ANSIBLE_STDOUT_CALLBACK="ansible.builtin.default")
    proc = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(tmp_path / "inventory.ini"),
                           str(tmp_path / "play.yml")], env=env, capture_output=True, text=True, timeout=300,
                          check=False)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    for gateway in ("gw1", "gw2"):
        assert any(line.startswith(f"fatal: [{gateway}]") and "no host of the fleet was judged or deployed in this "
                   "run" in line for line in lines), proc.stdout
        recap = next(line for line in lines if line.startswith(gateway + " ") and "ok=" in line)
        assert "failed=1" in recap, recap
    # Which gateways read the fleet: the first one alone when they route one fleet (its facts go to both).
    start = next(index for index, line in enumerate(lines) if line.startswith("TASK [") and "Keep the fleet's servers"
                 in line and ("once for" in line) == one_fleet)
    end = next(index for index in range(start + 1, len(lines)) if lines[index].startswith("TASK ["))
    assert sorted(line for line in lines[start + 1:end] if line.startswith("ok: ")) == (
        ["ok: [gw1]"] if one_fleet else ["ok: [gw1]", "ok: [gw2]"])
