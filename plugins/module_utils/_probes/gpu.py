"""NVIDIA GPU probes: the card list, VRAM of the visible cards, visible count (spec sections 4.6, 4.7).

NVML (``pynvml`` from PyPI ``nvidia-ml-py``) is asked first, ``nvidia-smi`` is
the fallback, and neither answering means "unknown" (None), never an error.
NVML and nvidia-smi both number the cards in PCI bus order.

When to call is the module's decision, not this file's: the spec skips the
VRAM probe on macOS, when EXTRA_ARGS has ``-dev``/``--device`` or
LLAMA_ARG_DEVICE is set, and skips the GPU count also when
CUDA_SCALE_LAUNCH_QUEUES is set or CUDA_LAUNCH_QUEUES is ``off``.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

try:
    import pynvml
except ImportError as _error:  # sanity tests and hosts without nvidia-ml-py
    pynvml = None
    PYNVML_IMPORT_ERROR: str = str(_error)
else:
    PYNVML_IMPORT_ERROR = ""

SMI_TIMEOUT_S = 3.0
SMI_QUERY = ("--query-gpu=index,uuid,name,memory.total", "--format=csv,noheader,nounits")
# Where nvidia-smi lives when the Ansible process's PATH is minimal.
SMI_PATH = "/usr/bin:/bin:/usr/sbin:/sbin:/usr/local/bin:/usr/local/sbin"
SMI_FIELDS = 4

# Go's strconv.Atoi syntax, which the spec's parser uses (no spaces, no '_').
_INTEGER = re.compile(r"[+-]?[0-9]+")

# A runner takes (argv, timeout seconds) and returns (exit status, stdout text).
Runner = Callable[[Sequence[str], float], tuple[int, str]]


@dataclass(frozen=True)
class Gpu:
    """One NVIDIA card, numbered in PCI bus order."""

    index: int
    uuid: str
    name: str
    total_mib: int
    free_mib: int = -1  # free now, as NVML reports it; -1 = unknown (nvidia-smi's query asks the total only)


def _text(value: Any) -> str:
    # Old pynvml releases return bytes, current ones str.
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return str(value)


def nvml_gpus(nvml: ModuleType | Any = None) -> list[Gpu] | None:
    """Cards as NVML reports them; None when NVML is missing or any call fails.

    ``nvml`` is the ``pynvml`` module (tests pass a fake one). A card reporting
    no memory makes the whole answer unknown, as in the nvidia-smi parser.
    """
    if nvml is None:
        nvml = pynvml
    if nvml is None:
        return None
    try:
        nvml.nvmlInit()
    except Exception:  # the library is foreign code: any failure means "no NVML"
        return None
    try:
        gpus = []
        for index in range(int(nvml.nvmlDeviceGetCount())):
            handle = nvml.nvmlDeviceGetHandleByIndex(index)
            memory = nvml.nvmlDeviceGetMemoryInfo(handle)
            total_mib = int(memory.total) >> 20
            if total_mib <= 0:
                return None
            gpus.append(
                Gpu(
                    index=index,
                    uuid=_text(nvml.nvmlDeviceGetUUID(handle)),
                    name=_text(nvml.nvmlDeviceGetName(handle)),
                    total_mib=total_mib,
                    free_mib=max(int(memory.free), 0) >> 20,
                )
            )
        return gpus
    except Exception:  # NVMLError (no permission, GPU lost…) or a broken binding
        return None
    finally:
        # Nothing left to do about a failed shutdown: the answer stands.
        with contextlib.suppress(Exception):
            nvml.nvmlShutdown()


def _integer(text: str) -> int | None:
    text = text.strip()
    return int(text) if _INTEGER.fullmatch(text) else None


def parse_smi(text: str) -> list[Gpu] | None:
    """Parse ``nvidia-smi --query-gpu=index,uuid,name,memory.total --format=csv,noheader,nounits``.

    As in spec section 4.6: lines with fewer than 2 fields are skipped; a
    non-integer index or MiB, or MiB <= 0 (``[N/A]`` on unified-memory parts),
    makes the whole answer unknown (None). A line with 2 or 3 fields is not this
    query's output: unknown too. Empty output is an empty list.
    """
    gpus = []
    for line in text.strip().splitlines():
        fields = line.split(",")
        if len(fields) < 2:
            continue
        if len(fields) < SMI_FIELDS:
            return None
        index, total_mib = _integer(fields[0]), _integer(fields[-1])
        if index is None or total_mib is None or total_mib <= 0:
            return None
        # A comma inside the name would shift the fields: the name takes the middle.
        name = ",".join(fields[2:-1]).strip()
        gpus.append(Gpu(index=index, uuid=fields[1].strip(), name=name, total_mib=total_mib))
    return gpus


def run_smi(argv: Sequence[str], timeout: float) -> tuple[int, str]:
    """Run nvidia-smi with a fixed environment; stdout only (stderr would break the CSV)."""
    # Not AnsibleModule.run_command: it has no timeout, and nvidia-smi can block for minutes on a wedged driver.
    completed = subprocess.run(  # pylint: disable=ansible-bad-function
        list(argv),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        timeout=timeout,
        check=False,
        env={"PATH": SMI_PATH, "LC_ALL": "C"},
    )
    return completed.returncode, completed.stdout.decode("utf-8", errors="replace")


def smi_gpus(timeout: float = SMI_TIMEOUT_S, runner: Runner | None = None) -> list[Gpu] | None:
    """Cards as ``nvidia-smi`` reports them; None when the tool is missing, fails or times out."""
    if runner is None:
        binary = shutil.which("nvidia-smi", path=os.pathsep.join((os.environ.get("PATH", ""), SMI_PATH)))
        if binary is None:
            return None
        argv: list[str] = [binary, *SMI_QUERY]
        runner = run_smi
    else:
        argv = ["nvidia-smi", *SMI_QUERY]
    try:
        status, output = runner(argv, timeout)
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    if status != 0:
        return None
    return parse_smi(output)


def list_gpus() -> tuple[list[Gpu] | None, str]:
    """(cards, source): NVML first, then nvidia-smi; (None, "") when neither answers."""
    gpus = nvml_gpus()
    if gpus is not None:
        return gpus, "nvml"
    gpus = smi_gpus()
    if gpus is not None:
        return gpus, "nvidia-smi"
    return None, ""


def visible_vram_mib(gpus: Sequence[Gpu] | None, cuda_visible_devices: str, pci_order: bool) -> int:
    """Total VRAM (MiB) of the cards CUDA_VISIBLE_DEVICES lets the engine see (spec section 4.6).

    No selection: every card. A UUID or MIG item, or an index no card has: 0
    (unknown). With PCI order the selected cards are summed; without it CUDA
    numbers the cards fastest first, so the smallest card times the count is
    used, a safe lower bound. Duplicate items count twice, as in the spec.
    """
    if not gpus:
        return 0
    by_index = {gpu.index: gpu.total_mib for gpu in gpus}
    selection = cuda_visible_devices.strip()
    if not selection:
        return sum(by_index.values())
    total = 0
    count = 0
    for raw_item in selection.split(","):
        item = raw_item.strip()
        if not item:
            continue
        index = _integer(item)
        if index is None or index not in by_index:
            return 0
        total += by_index[index]
        count += 1
    if not pci_order:
        return min(by_index.values()) * count
    return total


def visible_gpu_count(cuda_visible_devices: str, gpus: Sequence[Gpu] | None) -> int:
    """GPUs the engine will see (spec section 4.7); 0 = unknown.

    A non-empty CUDA_VISIBLE_DEVICES counts its non-empty comma items (even
    UUIDs: each names one card); otherwise the number of cards found.
    """
    if cuda_visible_devices:
        return sum(1 for item in cuda_visible_devices.split(",") if item.strip())
    return len(gpus) if gpus else 0
