"""scripts/steps.sh: a failed step ends with the lines that say why, since CI keeps only the end of the output."""

import os
import re
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


MAKEFILE = """\
slow:
\t@sleep 2; echo slow done
waits:
\t@sleep 2; for i in $$(seq 300); do [ -e fast.done ] && exit 0; sleep 0.1; done; echo 'fast never ran'; exit 5
fast:
\t@touch fast.done; echo fast done
after:
\t@echo '============ 3 passed in 0.01s ============'
broken:
\t@echo 'fatal: [h]: FAILED!'; exit 3
first:
\t@echo first
"""


def _make(tmp_path, *specs):
    (tmp_path / "Makefile").write_text(MAKEFILE)
    env = dict(os.environ, LLAMAFLEET_CACHE=str(tmp_path / "cache"), LLAMAFLEET_FULL_LOGS="0", MAKE="make")
    env.pop("VERBOSE", None)
    env.pop("MAKEFLAGS", None)
    return subprocess.run([str(ROOT / "scripts" / "steps.sh"), "make", "t", *specs], check=False, env=env,
                          capture_output=True, text=True, timeout=60, cwd=tmp_path)


def test_lanes_run_side_by_side_and_each_step_says_its_time(tmp_path):
    # "waits" ends only once "fast", in the other lane, has run: lanes run one after the other would fail it (exit 5).
    result = _make(tmp_path, "first=one", ";", "waits=two", "after=three", "&", "fast=four")
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("t: 4 steps; logs in")
    assert "      side by side: waits,after | fast" in lines
    assert "[2/4] waits — two (log: waits.log)" in lines
    # Each lane names its own next step.
    fast_started = lines.index("[4/4] fast — four (log: fast.log)")
    assert any(re.fullmatch(r" {6}done in \d+ s; next: after", line) for line in lines)
    assert any(i > fast_started and line == "      done in 0 s" for i, line in enumerate(lines))
    assert "      3 passed in 0.01s" in lines
    # The recap: every step's time, in the steps' order, whatever lane it ran in.
    recap = lines[lines.index("t: time per step") + 1:-1]
    assert [line.split()[0] for line in recap] == ["first", "waits", "after", "fast"]
    assert int(re.fullmatch(r" {6}waits {12}(\d+) s", recap[1]).group(1)) >= 2
    assert lines[-1].startswith("t: 4 steps done in")


def test_a_failed_lane_fails_the_run_once_the_others_are_done(tmp_path):
    result = _make(tmp_path, "broken=one", "&", "slow=two", ";", "fast=three")
    assert result.returncode == 2  # make's status for a failed recipe
    assert "slow — two" in result.stdout
    assert re.search(r"^ {6}done in [2-9] s$", result.stdout, re.MULTILINE)  # the other lane finished
    assert "fast — three" not in result.stdout  # nothing after the group
    assert "FAILED: broken" in result.stderr
    # The recap comes last, failed and unrun steps included.
    recap = result.stderr.splitlines()[-4:]
    assert recap[0] == "t: time per step"
    assert re.fullmatch(r" {6}broken {11}\d+ s, FAILED", recap[1])
    assert re.fullmatch(r" {6}slow {13}[2-9] s", recap[2])
    assert recap[3] == "      fast             not run"
