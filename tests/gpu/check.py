"""The in-Python half of tests/gpu/run.sh: probe, plan, start the planned engine, check it, capture.

Usage: check.py --mode gpu|cpu --engine BIN_DIR --model FILE.gguf --captures DIR --steps FILE.tsv

Calls the collection's own code the way llama_server_plan does (``planning.plan_from_params`` over the
module's option defaults, which runs ``plan_host.probe_and_plan``: NVML through pynvml, nvidia-smi, the
engine's --help, the GGUF header), then starts the planned argv with the environment the role's unit would
give it. Each step appends "name<TAB>seconds<TAB>result<TAB>detail" to --steps; result is "pass", "FAIL" or
"not run (no GPU)". In cpu mode (the dry run) the GPU-only steps are reported as not run, never as passed.
Exit status: 1 when a step failed.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import importlib.metadata
import json
import os
import platform
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
import conftest  # noqa: E402 - makes ansible_collections.llamafleet.llamacpp importable (symlink tree)

conftest.collection_path()

from ansible_collections.llamafleet.llamacpp.plugins.module_utils import gguf_meta  # noqa: E402
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._converge.planning import (  # noqa: E402
    plan_from_params,
    with_defaults,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes import gpu  # noqa: E402
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.engine import engine_env  # noqa: E402

NOT_RUN = "not run (no GPU)"
N_PREDICT = 8
# systemd's default PATH for services: what the role's unit runs the engine with.
UNIT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
OFFLOADED = re.compile(r"offloaded (\d+)/(\d+) layers to GPU")
MIB = 1 << 20


class Steps:
    def __init__(self, path: Path):
        self.path = path
        self.failed = False

    def record(self, name: str, seconds: float, result: str, detail: str = "") -> None:
        self.failed = self.failed or result == "FAIL"
        line = "\t".join((name, f"{seconds:.1f}", result, detail.replace("\t", " ").replace("\n", " ")))
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(line + "\n")
        print(f"check: {name}: {result} ({seconds:.1f} s) {detail}", file=sys.stderr, flush=True)

    def not_run(self, name: str, why: str = "") -> None:
        self.record(name, 0.0, NOT_RUN, why)


def write_json(path: Path, data) -> None:
    path.write_text(json.dumps(data, indent=2, sort_keys=True, default=str) + "\n", encoding="utf-8")


def package_version(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return ""


def text(value) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def nvml_readings(pid: int = 0) -> dict:
    """Driver, NVML and per-card readings (memory in bytes), and the memory ``pid`` holds on each card."""
    nvml = gpu.pynvml
    if nvml is None:
        return {"error": f"pynvml not importable: {gpu.PYNVML_IMPORT_ERROR}"}
    nvml.nvmlInit()
    try:
        out: dict = {
            "driver_version": text(nvml.nvmlSystemGetDriverVersion()),
            "nvml_version": text(nvml.nvmlSystemGetNVMLVersion()),
            "cuda_driver_version": int(nvml.nvmlSystemGetCudaDriverVersion()),
            "devices": [],
        }
        for index in range(int(nvml.nvmlDeviceGetCount())):
            handle = nvml.nvmlDeviceGetHandleByIndex(index)
            memory = nvml.nvmlDeviceGetMemoryInfo(handle)
            processes = []
            with contextlib.suppress(nvml.NVMLError):
                processes = [
                    {"pid": int(p.pid), "used_bytes": int(p.usedGpuMemory or 0)}
                    for p in nvml.nvmlDeviceGetComputeRunningProcesses(handle)
                ]
            out["devices"].append({
                "index": index,
                "name": text(nvml.nvmlDeviceGetName(handle)),
                "uuid": text(nvml.nvmlDeviceGetUUID(handle)),
                "pci_bus_id": text(nvml.nvmlDeviceGetPciInfo(handle).busId),
                "compute_capability": ".".join(map(str, nvml.nvmlDeviceGetCudaComputeCapability(handle))),
                "memory_total": int(memory.total),
                "memory_used": int(memory.used),
                "memory_free": int(memory.free),
                "processes": processes,
                "pid_used_bytes": sum(p["used_bytes"] for p in processes if p["pid"] == pid) if pid else 0,
            })
        return out
    finally:
        with contextlib.suppress(Exception):
            nvml.nvmlShutdown()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def run_engine_text(binary: str, args: list[str], env: dict, out: Path) -> str:
    done = subprocess.run([binary, *args], env=env, capture_output=True, text=True, timeout=60, check=False)
    body = done.stdout + done.stderr
    out.write_text(body, encoding="utf-8")
    return body


def http_json(url: str, body: dict | None = None, timeout: float = 120.0) -> tuple[int, dict]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as resp:
            return resp.status, json.loads(resp.read() or b"{}")
    except urllib.error.HTTPError as err:
        return err.code, {}


def wait_healthy(proc: subprocess.Popen, url: str, log: Path, timeout: float) -> str:
    """"" when /health answered 200, else why not."""
    deadline = time.monotonic() + timeout
    status = 0
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return f"engine exited {proc.returncode}: {log.read_text(errors='replace')[-800:]}"
        with contextlib.suppress(OSError, ValueError):
            status = http_json(url, timeout=2)[0]
            if status == 200:
                return ""
        time.sleep(0.25)
    return f"no /health 200 within {timeout:.0f} s (last {status})"


def stop(proc: subprocess.Popen) -> int:
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)  # the unit's KillSignal: finish requests, free the GPU
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.returncode


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mode", choices=("gpu", "cpu"), required=True)
    parser.add_argument("--engine", required=True, help="directory holding llama-server")
    parser.add_argument("--model", required=True)
    parser.add_argument("--captures", required=True, type=Path)
    parser.add_argument("--steps", required=True, type=Path)
    args = parser.parse_args(argv)
    on_gpu = args.mode == "gpu"
    steps = Steps(args.steps)
    caps = args.captures
    caps.mkdir(parents=True, exist_ok=True)
    binary = str(Path(args.engine) / "llama-server")
    model = str(Path(args.model).resolve())
    work = Path(tempfile.mkdtemp(prefix="llamafleet-gpu-check."))

    versions = {
        "python": platform.python_version(),
        "gguf": package_version("gguf"),
        "nvidia-ml-py": package_version("nvidia-ml-py"),
        "pynvml_file": getattr(gpu.pynvml, "__file__", ""),
        "collection": re.search(r"^version:\s*(\S+)", (REPO / "galaxy.yml").read_text(), re.M).group(1),
        "mode": args.mode,
    }

    # The tiny model, through the collection's own reader: what the planner will see.
    started = time.monotonic()
    try:
        info = gguf_meta.read_gguf_info(model)
        steps.record("gguf_header", time.monotonic() - started, "pass",
                     f"{info.arch}, {info.block_count} blocks, {info.tensor_count} tensors")
    except Exception as err:  # the reader's own error or a missing gguf package
        steps.record("gguf_header", time.monotonic() - started, "FAIL", str(err))
        return 1

    # Probes, each source on its own (the plan asks list_gpus: NVML first, then nvidia-smi).
    started = time.monotonic()
    nvml_cards, smi_cards = gpu.nvml_gpus(), gpu.smi_gpus()
    probes = {
        "nvml": None if nvml_cards is None else [dataclasses.asdict(c) for c in nvml_cards],
        "nvidia_smi": None if smi_cards is None else [dataclasses.asdict(c) for c in smi_cards],
        "pynvml_import_error": gpu.PYNVML_IMPORT_ERROR,
    }
    write_json(caps / "probes.json", probes)
    seconds = time.monotonic() - started
    if on_gpu:
        problems = []
        if not nvml_cards:
            problems.append(f"NVML found no card ({gpu.PYNVML_IMPORT_ERROR or 'pynvml answered nothing'})")
        if not smi_cards:
            problems.append("nvidia-smi found no card")
        if nvml_cards and smi_cards and [(c.uuid, c.total_mib) for c in nvml_cards] != [
                (c.uuid, c.total_mib) for c in smi_cards]:
            problems.append("NVML and nvidia-smi disagree (uuid, MiB)")
        cards = ", ".join(f"{c.index}: {c.name} {c.total_mib} MiB" for c in nvml_cards or [])
        steps.record("probe_gpu", seconds, "FAIL" if problems else "pass", "; ".join(problems) or cards)
    else:
        found = len(nvml_cards or smi_cards or [])
        steps.record("probe_gpu", seconds, "pass", f"probes ran: NVML {'none' if nvml_cards is None else found}, "
                     f"nvidia-smi {'none' if smi_cards is None else len(smi_cards)} (no GPU expected)")

    if on_gpu:
        started = time.monotonic()
        try:
            before = nvml_readings()
            write_json(caps / "nvml-before.json", before)
            versions.update({k: before.get(k) for k in ("driver_version", "nvml_version", "cuda_driver_version")})
            steps.record("nvml_readings", time.monotonic() - started, "pass",
                         f"driver {before['driver_version']}, NVML {before['nvml_version']}")
        except Exception as err:  # NVMLError or a broken binding: this is what the step checks
            before = {}
            steps.record("nvml_readings", time.monotonic() - started, "FAIL", repr(err))
    else:
        before = {}
        steps.not_run("nvml_readings")

    # The service environment the plan and the start get. The log verbosity is a service variable, as an
    # operator would set it: the loader's "offloaded N/M layers" line is printed from level 4 on.
    service_env = {"LLAMA_ARG_LOG_VERBOSITY": "4"}
    if os.environ.get("LD_LIBRARY_PATH"):
        # Where this machine's driver library is found only through it, the service would need it too.
        service_env["LD_LIBRARY_PATH"] = os.environ["LD_LIBRARY_PATH"]

    # Engine texts, as captures (and the version for the labels), in the environment the probes use.
    text_env = engine_env(binary, {k: v for k, v in service_env.items() if not k.startswith("LLAMA_ARG_")})
    version_text = run_engine_text(binary, ["--version"], text_env, caps / "engine-version.txt")
    run_engine_text(binary, ["--help"], text_env, caps / "engine-help.txt")
    devices_text = run_engine_text(binary, ["--list-devices"], text_env, caps / "engine-list-devices.txt")
    versions["engine"] = " ".join(version_text.split())[:200]

    # Plan as the module does.
    home = work / "home"
    home.mkdir()
    request = {
        "bin": binary,
        "home": str(home),
        "model_dirs": [str(Path(model).parent)],
        "environment": service_env,
        "cache_dir": str(work / "plan-cache"),
        "preset": {"MODEL": Path(model).name, "HOST": "127.0.0.1", "PORT": str(free_port()), "CTX": "2048",
                   "NGL": "all"},
    }
    started = time.monotonic()
    outcome = plan_from_params(with_defaults(request), check_mode=False)
    result = outcome.result
    write_json(caps / "plan.json", {"request": request, "result": result, "failure": outcome.failure,
                                    "warnings": outcome.warnings})
    argv = result.get("argv") or []
    seconds = time.monotonic() - started
    if outcome.failure or not argv:
        steps.record("plan", seconds, "FAIL", outcome.failure or "no argv")
        write_json(caps / "versions.json", versions)
        return 1
    facts = result.get("facts") or {}
    plan_problem = ""
    if on_gpu and not (facts.get("gpu_count", 0) >= 1 and facts.get("vram_mib", 0) > 0):
        plan_problem = f"the plan saw no GPU (gpu_count {facts.get('gpu_count')}, vram_mib {facts.get('vram_mib')})"
    steps.record("plan", seconds, "FAIL" if plan_problem else "pass",
                 plan_problem or f"gpu_source {facts.get('gpu_source') or 'none'}, gpus {facts.get('gpu_count')}, "
                 f"vram {facts.get('vram_mib')} MiB, argv: {' '.join(argv[1:])}")

    # Start the planned argv with the unit's environment: the service's variables, the plan's over them,
    # and no llama.cpp config directory.
    config_home = work / "no-config"
    config_home.mkdir()
    launch_env = {"PATH": UNIT_PATH, **service_env, **(result.get("env") or {}), "XDG_CONFIG_HOME": str(config_home)}
    if "--slot-save-path" in argv:
        Path(argv[argv.index("--slot-save-path") + 1]).mkdir(mode=0o700, parents=True, exist_ok=True)
    port = int(argv[argv.index("--port") + 1])
    log_path = caps / "server.log"
    started = time.monotonic()
    with log_path.open("wb") as log_handle:
        proc = subprocess.Popen(argv, env=launch_env, stdout=log_handle, stderr=subprocess.STDOUT, cwd=home)
        try:
            why = wait_healthy(proc, f"http://127.0.0.1:{port}/health", log_path, timeout=120)
            steps.record("start_health", time.monotonic() - started, "FAIL" if why else "pass",
                         why or f"/health 200, pid {proc.pid}")
            if not why:
                started = time.monotonic()
                status, answer = http_json(
                    f"http://127.0.0.1:{port}/completion",
                    {"prompt": "Hello world", "n_predict": N_PREDICT, "temperature": 0, "ignore_eos": True},
                )
                write_json(caps / "completion.json", answer)
                got = answer.get("tokens_predicted", 0)
                ok = status == 200 and got == N_PREDICT and isinstance(answer.get("content"), str)
                steps.record("completion", time.monotonic() - started, "pass" if ok else "FAIL",
                             f"HTTP {status}, {got} tokens predicted: {str(answer.get('content'))[:60]!r}")
                if on_gpu:
                    started = time.monotonic()
                    after = nvml_readings(proc.pid)
                    write_json(caps / "nvml-after.json", after)
                    used = [d["memory_used"] for d in after.get("devices", [])]
                    used_before = [d["memory_used"] for d in before.get("devices", [])]
                    delta = sum(used) - sum(used_before) if len(used) == len(used_before) else 0
                    held = sum(d["pid_used_bytes"] for d in after.get("devices", []))
                    ok = held > 0 or delta > 0
                    steps.record("vram_used", time.monotonic() - started, "pass" if ok else "FAIL",
                                 f"device memory used +{delta / MIB:.0f} MiB, the engine's process holds "
                                 f"{held / MIB:.0f} MiB (NVML)")
            else:
                steps.record("completion", 0.0, "FAIL", "not tried: the engine is not healthy")
                if on_gpu:
                    steps.record("vram_used", 0.0, "FAIL", "not measured: the engine is not healthy")
        finally:
            code = stop(proc)
    steps.record("stop", 0.0, "pass" if code in (0, -signal.SIGINT) else "FAIL", f"exit status {code}")

    log_text = log_path.read_text(errors="replace")
    if on_gpu:
        match = OFFLOADED.search(log_text)
        expected = info.block_count + 1  # the repeating layers and the output layer
        if match is None:
            steps.record("offload", 0.0, "FAIL", "no 'offloaded N/M layers to GPU' line in the engine log")
        else:
            done, total = int(match.group(1)), int(match.group(2))
            ok = done == total == expected
            steps.record("offload", 0.0, "pass" if ok else "FAIL",
                         f"offloaded {done}/{total} layers (expected {expected}/{expected}); "
                         f"devices: {' '.join(devices_text.split())[:120]}")
    else:
        steps.not_run("offload")
        steps.not_run("vram_used")

    write_json(caps / "versions.json", versions)
    shutil.rmtree(work, ignore_errors=True)
    return 1 if steps.failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
