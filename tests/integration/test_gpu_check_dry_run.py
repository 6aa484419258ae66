"""The GPU check's own CPU-only dry run (tests/gpu/run.sh), as a device run would start it.

The carry is prepared the way a device run's is (`--prepare`: the sdist, the tiny model, the offline Python
libraries, under the 64 MiB a device run carries), then `--dry-run` runs every step on the CPU engine. The
GPU-only steps must say "not run (no GPU)", never pass.
"""

from __future__ import annotations

import csv
import os
import subprocess

from .conftest import REPO

GPU_ONLY = {"toolchain", "nvml_readings", "offload", "vram_used"}
ON_CPU = {"python_libs", "engine_build", "tiny_model", "gguf_header", "probe_gpu", "plan", "start_health",
          "completion", "stop"}


def test_the_dry_run_passes_and_claims_no_gpu_step(tmp_path):
    carry, out = tmp_path / "carry", tmp_path / "out"
    env = {**os.environ, "LLAMAFLEET_GPU_CARRY": str(carry), "OUT": str(out)}
    prepared = subprocess.run([str(REPO / "tests" / "gpu" / "run.sh"), "--prepare", str(carry)], env=env,
                              capture_output=True, text=True, timeout=900, check=False)
    assert prepared.returncode == 0, prepared.stdout + prepared.stderr
    assert "of the 64 MiB a device run carries" in prepared.stderr
    run = subprocess.run([str(REPO / "tests" / "gpu" / "run.sh"), "--dry-run"], env=env, capture_output=True,
                         text=True, timeout=900, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    with (out / "steps.tsv").open(encoding="utf-8") as handle:
        results = {row[0]: row[2] for row in csv.reader(handle, delimiter="\t")}  # step, seconds, result, detail
    assert {step for step, result in results.items() if result == "not run (no GPU)"} == GPU_ONLY, results
    assert {step for step, result in results.items() if result == "pass"} == ON_CPU, results
