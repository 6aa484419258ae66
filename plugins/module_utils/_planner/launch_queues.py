"""CUDA launch queues on multi-GPU hosts (spec section 8.6).

With two or more CUDA cards, a full-GPU layer split makes llama.cpp pipeline
micro-batches across the cards; a 4x CUDA launch queue lets the CPU queue
enough launches ahead to keep that pipeline full. It is a driver setting
(same kernels, same order, identical output) costing ~120 MB of RAM per GPU,
so it is only set where the pipeline can actually exist.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.argv_tokens import flag_value
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.facts import HostFacts
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.notes import Note
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.placement import (
    DEVICE_FLAGS,
    KV_ON_CPU,
    NGL_FLAGS,
    SPLIT_MODE_FLAGS,
    kv_offloaded,
    tensor_override,
)

LAUNCH_QUEUES_AUTO = "4x"
# The only values the CUDA driver understands; anything else it reads as 1x, silently.
LAUNCH_QUEUE_VALUES = ("0.25x", "0.5x", "2x", "4x")
_FULL_GPU_LAYERS = ("auto", "all", "999")


def served_gpu_count(extra: Sequence[str], facts: HostFacts) -> int:
    """How many CUDA cards the engine will use.

    An explicit device list (``-dev``/``--device``, else LLAMA_ARG_DEVICE)
    counts its CUDA entries only: Vulkan, Metal or ``none`` count zero, since
    the launch queue is a CUDA setting. Without a list, the probed GPU count.
    """
    devices = flag_value(extra, *DEVICE_FLAGS) or facts.arg_env.get("LLAMA_ARG_DEVICE", "")
    if devices == "":
        return facts.gpus
    return sum(1 for name in devices.split(",") if name.strip().upper().startswith("CUDA"))


def pipeline_blocker(preset: Mapping[str, str], extra: Sequence[str], arg_env: Mapping[str, str]) -> str:
    """Why llama.cpp will NOT pipeline across cards (``""`` = it may).

    The pipeline needs every layer on GPU, a layer split, the KV cache on GPU
    and no tensor override (``--n-cpu-moe`` and friends are overrides too).
    """
    reason = tensor_override(extra, arg_env)
    if reason:
        return reason
    if not kv_offloaded(extra, arg_env):
        return KV_ON_CPU
    # Read as written: only an exact "layer" (or nothing) keeps the layer split.
    mode = flag_value(extra, *SPLIT_MODE_FLAGS) or arg_env.get("LLAMA_ARG_SPLIT_MODE", "")
    if mode not in ("", "layer"):
        return f"split mode {mode}"
    layers = flag_value(extra, *NGL_FLAGS)
    if layers == "":
        # An empty NGL becomes "-ngl auto" (or 999) on the command line, so the
        # variable only matters when NGL=auto writes no flag at all.
        layers = preset.get("NGL", "").strip()
        if layers.lower() == "auto":
            layers = arg_env.get("LLAMA_ARG_N_GPU_LAYERS", "")
    layers = layers.strip().lower()
    if layers and layers not in _FULL_GPU_LAYERS:
        return f"GPU layers limited to {layers}"
    return ""


def launch_queues_env(preset: Mapping[str, str], place: Sequence[str], facts: HostFacts) -> tuple[str, list[Note]]:
    """CUDA_SCALE_LAUNCH_QUEUES value (``""`` = leave unset) and notes.

    ``place`` is the placement view of EXTRA_ARGS (plus ``-sm tensor`` when
    tensor split was accepted). A value already in the service environment
    (``facts.launch_queues``) is the user's choice: nothing is said.
    """
    if facts.launch_queues:
        return "", []
    written = preset.get("CUDA_LAUNCH_QUEUES", "")
    want = written.strip().lower()
    if want == "off":
        return "", []
    if want in LAUNCH_QUEUE_VALUES:
        # An explicit value is set whatever the GPU count: the user asked for it.
        return want, [Note("queues.explicit", f"CUDA_SCALE_LAUNCH_QUEUES={want} (CUDA_LAUNCH_QUEUES)")]
    notes: list[Note] = []
    if want not in ("", "auto"):
        notes.append(
            Note(
                "queues.invalid",
                f"CUDA_LAUNCH_QUEUES={written} ignored (0.25x, 0.5x, 2x, 4x or off) → automatic",
            )
        )
    gpus = served_gpu_count(place, facts)
    if gpus < 2 or pipeline_blocker(preset, place, facts.arg_env):
        return "", notes
    notes.append(
        Note(
            "queues.auto",
            f"CUDA_SCALE_LAUNCH_QUEUES={LAUNCH_QUEUES_AUTO} ({gpus} GPU, pipeline parallelism possible) — "
            "CUDA_LAUNCH_QUEUES=off to disable",
        )
    )
    return LAUNCH_QUEUES_AUTO, notes
