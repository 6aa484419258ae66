"""`make demo` (scripts/plan_demo.py): the README's pure plan of the example two-GPU host runs and plans."""

import json
import os
import subprocess
import sys

import conftest

ROOT = os.path.dirname(os.path.abspath(conftest.__file__))


def test_the_demo_prints_a_plan():
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "plan_demo.py")], capture_output=True,
                          text=True, check=False, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    plan = json.loads(proc.stdout)
    assert plan["argv"][:3] == ["/opt/llama.cpp/bin/llama-server", "-m", "/srv/models/Qwen3-30B-A3B-Q4_K_M.gguf"]
    assert "--jinja" in plan["argv"]
