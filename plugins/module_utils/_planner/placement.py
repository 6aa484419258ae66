"""Shared readings of where weights, KV cache and context end up.

Several rule areas ask the same questions ("will --fit run?", "do weights
live in host RAM?", "what context will the engine open?"); each is answered
once here, from the preset, the normalised EXTRA_ARGS tokens and the
service's LLAMA_ARG_* environment (spec sections 1.6, 5.3, 8.3).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.argv_tokens import (
    env_truthy,
    flag_name,
    flag_value,
    flag_values,
    has_any_flag,
    parse_int,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.capabilities import fits_layers_itself
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.facts import HostFacts
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.notes import Note

NGL_SENTINEL = "999"
NGL_FLAGS = ("-ngl", "--n-gpu-layers", "--gpu-layers")
OT_FLAGS = ("-ot", "--override-tensor")
SPLIT_MODE_FLAGS = ("-sm", "--split-mode")
DEVICE_FLAGS = ("-dev", "--device")
OFF_WORDS = ("off", "disabled", "false", "0")

# Reason texts that other rules compare against.
TENSOR_OVERRIDE = "tensor override"
N_CPU_LAYER_FLAGS = (
    ("LLAMA_ARG_N_CPU_MOE", ("-ncmoe", "--n-cpu-moe"), "--n-cpu-moe"),
    ("LLAMA_ARG_N_CPU_FFN", ("-ncffn", "--n-cpu-ffn"), "--n-cpu-ffn"),
)
KV_ON_CPU = "KV cache on CPU"


def ngl_args(ngl: str, fits_itself: bool, knows_all: bool = True) -> tuple[list[str], Note | None]:
    """NGL -> GPU-layer flags (spec section 5.3).

    ``knows_all``: the engine takes ``-ngl all`` (its help says so). Older
    engines read the value as a number and exit on ``all``: 999 means every
    layer there (a deliberate difference from the spec, which passes it as is).
    """
    ngl = ngl.strip()
    if ngl.lower() == "auto":
        return [], None
    if ngl.lower() == "all" and not knows_all:
        return ["-ngl", NGL_SENTINEL], Note(
            "ngl.all_unsupported",
            f"NGL={ngl}: this engine reads -ngl as a number only → -ngl {NGL_SENTINEL} (every layer)",
        )
    if ngl == NGL_SENTINEL and fits_itself:
        return ["-ngl", "auto"], Note(
            "ngl.sentinel_auto",
            "NGL=999 (sentinel 'all layers') → -ngl auto: this engine measures free VRAM itself. "
            "NGL=all to force the old behaviour.",
        )
    if ngl:
        return ["-ngl", ngl], None
    if fits_itself:
        return ["-ngl", "auto"], None
    # An old engine without -ngl would run entirely on the CPU.
    return ["-ngl", NGL_SENTINEL], None


def kv_offloaded(extra: Sequence[str], arg_env: Mapping[str, str]) -> bool:
    """Is the KV cache on the GPU (llama.cpp's default)?"""
    decided = None
    for tok in extra:
        name = flag_name(tok)
        if name in ("-kvo", "--kv-offload"):
            decided = True
        elif name in ("-nkvo", "--no-kv-offload"):
            decided = False
    if decided is not None:
        return decided
    if "LLAMA_ARG_NO_KV_OFFLOAD" in arg_env:
        return False
    return arg_env.get("LLAMA_ARG_KV_OFFLOAD", "").strip().lower() not in OFF_WORDS


def _n_cpu_layers_reason(extra: Sequence[str], arg_env: Mapping[str, str]) -> str:
    # llama.cpp adds these up: "--n-cpu-moe 0" does not cancel an earlier value.
    for env_key, flags, long_name in N_CPU_LAYER_FLAGS:
        for raw in [*flag_values(extra, *flags), arg_env.get(env_key, "")]:
            value = raw.strip()
            if value and value != "0":
                return f"{long_name} layers on CPU"
    return ""


def tensor_override(extra: Sequence[str], arg_env: Mapping[str, str]) -> str:
    """Why tensor placement is manual (spec 1.6 tensorOverride), else ``""``."""
    if (
        has_any_flag(extra, *OT_FLAGS, "--cpu-moe", "-cmoe")
        or arg_env.get("LLAMA_ARG_OVERRIDE_TENSOR", "")
        or env_truthy(arg_env.get("LLAMA_ARG_CPU_MOE"))
    ):
        return TENSOR_OVERRIDE
    return _n_cpu_layers_reason(extra, arg_env)


def preset_kv_types(preset: Mapping[str, str]) -> tuple[str, str]:
    """KV_TYPE for both sides, KV_TYPE_K / KV_TYPE_V per side; empty = default."""
    both = preset.get("KV_TYPE", "")
    return preset.get("KV_TYPE_K", "") or both, preset.get("KV_TYPE_V", "") or both


def effective_kv_types(
    preset: Mapping[str, str], extra: Sequence[str], arg_env: Mapping[str, str]
) -> tuple[str, str, str]:
    """(K, V, source) the engine will really use; empty side = f16."""
    k = arg_env.get("LLAMA_ARG_CACHE_TYPE_K", "")
    v = arg_env.get("LLAMA_ARG_CACHE_TYPE_V", "")
    source = "set by LLAMA_ARG_CACHE_TYPE_K/V" if k or v else ""
    pk, pv = preset_kv_types(preset)
    if pk or pv:
        source = "KV_TYPE"
        k, v = pk or k, pv or v
    ek = flag_value(extra, "-ctk", "--cache-type-k")
    ev = flag_value(extra, "-ctv", "--cache-type-v")
    if ek or ev:
        source = "set by EXTRA_ARGS"
        k, v = ek or k, ev or v
    return k, v, source


def gpu_layers_written(preset: Mapping[str, str], extra: Sequence[str], arg_env: Mapping[str, str]) -> str:
    """GPU layers as the user wrote them: EXTRA, else NGL, NGL=auto -> the variable."""
    ngl = flag_value(extra, *NGL_FLAGS)
    if ngl == "":
        ngl = preset.get("NGL", "").strip()
        if ngl.lower() == "auto":
            ngl = arg_env.get("LLAMA_ARG_N_GPU_LAYERS", "")
    return ngl


def cpu_weights(
    preset: Mapping[str, str], extra: Sequence[str], arg_env: Mapping[str, str], block_count: int
) -> str:
    """Why weights (or the KV cache) live in host RAM; ``""`` = all on GPU."""
    overrides = flag_values(extra, *OT_FLAGS)
    if arg_env.get("LLAMA_ARG_OVERRIDE_TENSOR", ""):
        overrides.append(arg_env["LLAMA_ARG_OVERRIDE_TENSOR"])
    for value in overrides:
        for element in value.split(","):
            sep, buffer = element.partition("=")[1:]
            if sep and buffer.strip().upper().startswith("CPU"):
                return "tensors on CPU (-ot)"
    if has_any_flag(extra, "--cpu-moe", "-cmoe") or env_truthy(arg_env.get("LLAMA_ARG_CPU_MOE")):
        return "experts on CPU"
    reason = _n_cpu_layers_reason(extra, arg_env)
    if reason:
        return reason
    if not kv_offloaded(extra, arg_env):
        return KV_ON_CPU
    n = parse_int(gpu_layers_written(preset, extra, arg_env).strip())
    # 999 is the "all layers" sentinel; fewer than blocks + output layer leaves some on CPU.
    if n is not None and n != 999 and (block_count == 0 or n < block_count + 1):
        return f"GPU layers limited to {n}"
    return ""


def cpu_experts(extra: Sequence[str], arg_env: Mapping[str, str]) -> str:
    """Manual MoE expert placement on CPU, else ``""``."""
    overrides = flag_values(extra, *OT_FLAGS)
    if arg_env.get("LLAMA_ARG_OVERRIDE_TENSOR", ""):
        overrides.append(arg_env["LLAMA_ARG_OVERRIDE_TENSOR"])
    for value in overrides:
        for element in value.split(","):
            pattern, sep, buffer = element.partition("=")
            if sep and "exps" in pattern.lower() and buffer.strip().upper().startswith("CPU"):
                return "-ot experts=CPU"
    if has_any_flag(extra, "--cpu-moe", "-cmoe") or env_truthy(arg_env.get("LLAMA_ARG_CPU_MOE")):
        return "--cpu-moe"
    for raw in [*flag_values(extra, "-ncmoe", "--n-cpu-moe"), arg_env.get("LLAMA_ARG_N_CPU_MOE", "")]:
        value = raw.strip()
        if value and value != "0":
            return f"--n-cpu-moe {value}"
    return ""


def ngl_forced(preset: Mapping[str, str], extra: Sequence[str]) -> bool:
    """The user pinned a layer count (999 is the sentinel, not a choice)."""
    ngl = flag_value(extra, *NGL_FLAGS)
    if ngl == "":
        ngl = preset.get("NGL", "").strip()
        if ngl == NGL_SENTINEL:
            return False
    return ngl != "" and ngl.lower() != "auto"


def split_mode_written(extra: Sequence[str], arg_env: Mapping[str, str]) -> str:
    """-sm from EXTRA, else LLAMA_ARG_SPLIT_MODE, lower-cased and trimmed."""
    return (flag_value(extra, *SPLIT_MODE_FLAGS) or arg_env.get("LLAMA_ARG_SPLIT_MODE", "")).strip().lower()


def fit_blocker(preset: Mapping[str, str], extra: Sequence[str], facts: HostFacts) -> str:
    """Why llama.cpp will NOT run --fit (``""`` = it will). Spec section 8.3."""
    arg_env = facts.arg_env
    fit = flag_value(extra, "-fit", "--fit") or arg_env.get("LLAMA_ARG_FIT", "")
    if fit.strip().lower() in OFF_WORDS:
        return "--fit off"
    ngl = flag_value(extra, *NGL_FLAGS)
    if ngl == "":
        args = ngl_args(preset.get("NGL", ""), fits_layers_itself(facts.help))[0]
        ngl = args[1] if len(args) == 2 else arg_env.get("LLAMA_ARG_N_GPU_LAYERS", "")
    # -1 is what "auto" means to the engine: not a user choice for --fit.
    ngl = ngl.strip()
    if ngl and ngl != "-1" and ngl.lower() != "auto":
        return f"GPU layers fixed at {ngl}"
    if has_any_flag(extra, "-ts", "--tensor-split") or arg_env.get("LLAMA_ARG_TENSOR_SPLIT", ""):
        return "--tensor-split"
    reason = tensor_override(extra, arg_env)
    if reason:
        return reason
    mode = split_mode_written(extra, arg_env)
    if mode in ("row", "tensor"):
        return f"-sm {mode}"
    return ""
