"""The fleet stdout callback on a real ansible-playbook run: unchanged and skipped tasks print nothing."""

import os
import subprocess
import sys
from pathlib import Path

import conftest

PLAYBOOK = """
- hosts: localhost
  gather_facts: false
  tasks:
    - name: Skipped
      ansible.builtin.debug: {msg: never}
      when: false
    - name: Unchanged
      ansible.builtin.command: "true"
      changed_when: false
    - name: Changed
      ansible.builtin.command: "true"
    - name: A message
      ansible.builtin.debug: {msg: the fleet summary}
    - name: The fleet summary
      llamafleet.llamacpp.fleet_summary:
        hosts: [localhost]
        path: "{{ summary_path }}"
"""


def run(tmp_path, callback):
    playbook = tmp_path / "play.yml"
    playbook.write_text(PLAYBOOK)
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=conftest.collection_path(), ANSIBLE_NOCOLOR="1",
               ANSIBLE_STDOUT_CALLBACK=callback, ANSIBLE_LOCALHOST_WARNING="0")
    binary = Path(sys.executable).parent / "ansible-playbook"
    done = subprocess.run([str(binary), "-i", "localhost,", "-c", "local", "-e",
                           f"ansible_python_interpreter={sys.executable}", "-e",
                           f"summary_path={tmp_path / 'summary.md'}", str(playbook)], env=env,
                          capture_output=True, text=True, check=True, timeout=120)
    return done.stdout


def test_only_changes_and_messages_are_shown(tmp_path):
    quiet = run(tmp_path, "llamafleet.llamacpp.fleet")
    default = run(tmp_path, "ansible.builtin.default")
    for shown in ("TASK [Changed]", "changed: [localhost]", "TASK [A message]", '"msg": "the fleet summary"',
                  "ok=4    changed=1"):
        assert shown in quiet
        assert shown in default
    for hidden in ("TASK [Skipped]", "TASK [Unchanged]", "skipping:"):
        assert hidden not in quiet
    assert "TASK [Unchanged]" in default
    assert len(quiet.splitlines()) < len(default.splitlines())


def test_the_summary_prints_as_its_markdown(tmp_path):
    quiet = run(tmp_path, "llamafleet.llamacpp.fleet")
    written = (tmp_path / "summary.md").read_text().splitlines()
    assert f"ok: [localhost] fleet summary, written to {tmp_path / 'summary.md'}:" in quiet
    lines = quiet.splitlines()
    start = lines.index(written[0])
    assert lines[start:start + len(written)] == written
    assert any(line.startswith("| Host | Instance |") for line in written)
    # The default callback shows the same lines as a JSON list.
    default = run(tmp_path, "ansible.builtin.default")
    assert f'"{written[0]}",' in default
    assert written[0] not in default.splitlines()
