"""scripts/steps.sh: a failed step ends with the lines that say why, since CI keeps only the end of the output."""

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

FAILING = (
    "echo 'PLAY [Roll out] ****'; "
    'echo \'fatal: [llf-host2]: UNREACHABLE! => {"msg": "Failed to connect"}\'; '
    "for i in $(seq 200); do echo filler $i; done; "
    "echo 'llf-host2 : ok=3 changed=0 unreachable=1 failed=0'; "
    "echo 'ERROR    start-limit ➜ converge: Executed: Failed'; exit 4"
)


def _run(tmp_path, full_logs):
    script = f". {ROOT}/scripts/steps.sh; steps_begin t one; step one 'a failing step' bash -c \"$FAILING\"; steps_end"
    env = dict(os.environ, LLAMAFLEET_CACHE=str(tmp_path), LLAMAFLEET_FULL_LOGS=full_logs, FAILING=FAILING)
    env.pop("VERBOSE", None)
    return subprocess.run(
        ["bash", "-e", "-c", script], check=False, env=env, capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize("full_logs", ["1", "0"])
def test_a_failed_step_ends_with_its_failure_lines(tmp_path, full_logs):
    result = _run(tmp_path, full_logs)
    assert result.returncode == 4
    tail = result.stderr.splitlines()[-6:]
    assert any("its failure lines" in line for line in tail)
    assert any("2:fatal: [llf-host2]: UNREACHABLE!" in line for line in tail)
    assert any("204:ERROR    start-limit ➜ converge: Executed: Failed" in line for line in tail)
    # Recap lines are left out: nested runs that are meant to fail print them too.
    assert not any("unreachable=1" in line for line in tail)
    assert any(line.lstrip().startswith("disk free: ") for line in tail)
    assert tail[-1].lstrip().startswith("FAILED: one;")
    # The filler is not part of the digest.
    assert not any("filler" in line for line in tail)


def test_a_passing_step_prints_no_digest(tmp_path):
    script = f". {ROOT}/scripts/steps.sh; steps_begin t one; step one 'passes' true; steps_end"
    env = dict(os.environ, LLAMAFLEET_CACHE=str(tmp_path))
    env.pop("VERBOSE", None)
    result = subprocess.run(
        ["bash", "-e", "-c", script], check=False, env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0
    assert "failure lines" not in result.stdout + result.stderr
    assert "t: 1 step done in" in result.stdout
