"""What the planner asks the probes to look at, and how it reads what they saw (spec 1.1, 4.8).

Pure. The probes (``_probes/plan_host.py``) only read the host; every choice about the reading is made here: which
GPUs the engine will see (the preset's selection, typed, applied before the engine is asked anything), whether a
device pinned by hand makes VRAM unknown, whether the engine's build or device list is needed, which service
variables the planner reads, and how much a free-RAM reading may move before the plan follows it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._layout.paths import CUDA_ORDER
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner import capabilities
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.argv_tokens import has_any_flag
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.facts import GGUFInfo
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.placement import DEVICE_FLAGS
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.preset_text import split_args
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.preset_types import read_gpu_selection
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.recurrent_state import is_hybrid
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.switches import (
    SPEC_OFF,
    SPEC_UNREADABLE,
    spec_mode,
    split_mode_key,
)

# Environment groups of spec section 4.8 the planner reads from the service env.
_TRIMMED_ARG_ENV = frozenset(
    {"LLAMA_ARG_LOAD_MODE", "LLAMA_ARG_MLOCK", "LLAMA_ARG_NO_MMAP", "LLAMA_ARG_RPC", "LLAMA_ARG_CACHE_RAM"}
)
_USER_ENV = ("GGML_CUDA_GRAPH_OPT", "GGML_OP_OFFLOAD_MIN_BATCH", "GGML_CUDA_ALLREDUCE")
# What names devices or buffer types, in EXTRA_ARGS or the service environment.
_DEVICE_NAMING_FLAGS = (
    "-dev", "--device", "-devd", "--device-draft", "--spec-draft-device", "-mmdev", "--mmproj-device",
    "-ot", "--override-tensor", "-otd", "--override-tensor-draft", "--spec-draft-override-tensor",
)  # fmt: skip
_DEVICE_NAMING_ENV = ("LLAMA_ARG_DEVICE", "LLAMA_ARG_OVERRIDE_TENSOR", "MTMD_BACKEND_DEVICE")

# Free RAM moves all the time; a reading this close to the previous one keeps it,
# so the plan (and the unit file it renders) does not flap between runs.
RAM_AVAIL_TOLERANCE = 0.10
RAM_AVAIL_MIN_TOLERANCE_MIB = 1024


def arg_env_from(service_env: Mapping[str, str]) -> dict[str, str]:
    """LLAMA_ARG_* the engine will inherit (spec 4.8): non-empty values only."""
    out: dict[str, str] = {}
    for key, raw in service_env.items():
        if not key.startswith("LLAMA_ARG_"):
            continue
        if key == "LLAMA_ARG_NO_KV_OFFLOAD":
            out[key] = raw or "1"  # present, even empty, means "no offload"
            continue
        value = raw.strip() if key in _TRIMMED_ARG_ENV else raw
        if value:
            out[key] = value
    return out


def user_env_from(service_env: Mapping[str, str]) -> dict[str, str]:
    return {k: service_env[k] for k in _USER_ENV if service_env.get(k, "")}


@dataclass(frozen=True)
class HostView:
    """How the probes look at the host for this preset and service environment."""

    extra: tuple[str, ...]  # EXTRA_ARGS as written
    visible: str  # the CUDA_VISIBLE_DEVICES the engine will see ("" = every GPU)
    pci_order: bool  # its indices follow the PCI bus (nvidia-smi's numbering)
    # What the engine runs with while it is asked (--help, --list-devices): the preset's selection applied.
    engine_env: Mapping[str, str] = field(default_factory=dict)
    device_pinned: bool = False  # a device chosen by hand: VRAM and the GPU count stay unknown to the plan
    count_gpus: bool = False  # the launch-queue rule needs the number of visible GPUs
    launch_queues: str = ""  # CUDA_SCALE_LAUNCH_QUEUES set by the service
    probe_cpu: bool = True  # the thread budget comes from the cpuset (not LLAMA_ARG_THREADS)
    arg_env: Mapping[str, str] = field(default_factory=dict)
    user_env: Mapping[str, str] = field(default_factory=dict)


def gpu_selection_env(preset: Mapping[str, str]) -> dict[str, str]:
    """The plan's GPU selection as the engine's environment (spec 1.4), typed; {} when the preset selects none."""
    raw = preset.get("CUDA_VISIBLE_DEVICES", "").strip()
    selection = read_gpu_selection(raw)[0] if raw else ""
    return {"CUDA_VISIBLE_DEVICES": selection, **CUDA_ORDER} if selection else {}


def host_view(preset: Mapping[str, str], service_env: Mapping[str, str]) -> HostView:
    """Raises PlanError for a GPU selection the engine would misread, before anything runs it."""
    extra = tuple(split_args(preset.get("EXTRA_ARGS", "")))
    selection = gpu_selection_env(preset)
    if selection:
        visible, pci_order = selection["CUDA_VISIBLE_DEVICES"], True
    else:
        visible = service_env.get("CUDA_VISIBLE_DEVICES", "")
        pci_order = service_env.get("CUDA_DEVICE_ORDER", "") == CUDA_ORDER["CUDA_DEVICE_ORDER"]
    arg_env = arg_env_from(service_env)
    pinned = has_any_flag(extra, *DEVICE_FLAGS) or bool(arg_env.get("LLAMA_ARG_DEVICE", ""))
    queues = service_env.get("CUDA_SCALE_LAUNCH_QUEUES", "")
    return HostView(
        extra=extra,
        visible=visible,
        pci_order=pci_order,
        engine_env={**service_env, **selection},
        device_pinned=pinned,
        count_gpus=not (queues or preset.get("CUDA_LAUNCH_QUEUES", "").strip().lower() == "off" or pinned),
        launch_queues=queues,
        probe_cpu="LLAMA_ARG_THREADS" not in service_env,
        arg_env=arg_env,
        user_env=user_env_from(service_env),
    )


def needs_engine_build(preset: Mapping[str, str], gguf: GGUFInfo | None) -> bool:
    """The engine's build number matters: a hybrid model's rules, or SPEC=auto."""
    return is_hybrid(gguf) or spec_mode(preset) == "auto"


def needs_draft(preset: Mapping[str, str]) -> bool:
    return spec_mode(preset) not in (SPEC_OFF, SPEC_UNREADABLE) and bool(preset.get("MODEL_DRAFT", "").strip())


def splits_tensors(preset: Mapping[str, str], help_text: str) -> bool:
    return split_mode_key(preset) == "tensor" and capabilities.supports_tensor_split_mode(help_text)


def names_devices(extra: Sequence[str], arg_env: Mapping[str, str]) -> bool:
    """EXTRA_ARGS or the service environment name devices or buffer types: the engine's device list checks them."""
    return has_any_flag(extra, *_DEVICE_NAMING_FLAGS) or any(arg_env.get(k, "") for k in _DEVICE_NAMING_ENV)


def stable_ram_avail(measured: int, previous: int, total: int) -> int:
    """Keep the previous free-RAM reading while the new one stays close to it."""
    if previous <= 0 or measured <= 0:
        return measured
    tolerance = max(int(total * RAM_AVAIL_TOLERANCE), RAM_AVAIL_MIN_TOLERANCE_MIB)
    return previous if abs(measured - previous) <= tolerance else measured
