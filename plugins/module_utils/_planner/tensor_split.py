"""SPLIT_MODE=tensor: tensor parallelism across CUDA cards (spec section 13.10).

Layer split (llama.cpp's default) hands each card whole layers, run one after
the other. Tensor mode cuts every layer across the cards, which compute at the
same time and then add their partial results (all-reduce): faster decoding,
slower prefill, and a young feature. Hence opt-in, and a long list of clean
refusals rather than an engine that dies at load and restarts in a loop.

A refusal leaves argv and env exactly as without the key and adds one note.
There is no ``--fit`` in tensor mode, so the VRAM check is ours, and CTX is
never reduced to make things fit.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.access import is_external
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.argv_tokens import (
    env_truthy,
    flag_value,
    has_any_flag,
    parse_int,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.capabilities import (
    supports_tensor_split_mode,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.context_size import ctx_fixed, serve_ctx
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.facts import GGUFInfo, HostFacts, SplitDev
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.notes import Note
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.placement import (
    DEVICE_FLAGS,
    KV_ON_CPU,
    NGL_FLAGS,
    OFF_WORDS,
    SPLIT_MODE_FLAGS,
    effective_kv_types,
    kv_offloaded,
    tensor_override,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.recurrent_state import (
    MIB,
    ceil_mib,
    state_bytes,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.switches import (
    SPEC_OFF,
    SPLIT_NONE,
    SPLIT_UNREADABLE,
    side_slot_on,
    spec_mode,
    spec_user_set,
    split_mode_key,
)

# Architectures llama.cpp rejects in tensor mode (it would die at load time).
# qwen4exp is accepted upstream but its usual preset (experts on CPU, q8_0
# cache) is the opposite of what tensor mode needs.
SPLIT_DENY_ARCHS = frozenset(
    {
        "grok",
        "mpt",
        "plamo2",
        "minicpm3",
        "gemma3n",
        "mamba",
        "mamba2",
        "jamba",
        "falcon-h1",
        "olmo2",
        "olmoe",
        "deepseek2",
        "deepseek32",
        "hy_v4",
        "dots3note",
        "glm-dsa",
        "bitnet",
        "t5",
        "nemotron_h",
        "nemotron_h_moe",
        "granitehybrid",
        "minimax-01",
        "minimax-m2",
        "minimax-m3",
        "mistral4",
        "kimi-linear",
        "bailingmoe3",
        "kimi-k3",
        "glm5-next",
        "qwen3tts",
        "qwen4exp",
    }
)

# Tensor mode does not handle quantised caches; empty = engine default (f16).
_SPLIT_KV_TYPES = ("", "f16", "bf16", "f32")
_VRAM_MARGIN = 0.9
_FA_FLAGS = ("-fa", "--flash-attn")
_TS_FLAGS = ("-ts", "--tensor-split")
_ALLREDUCE = "GGML_CUDA_ALLREDUCE"
_ALL_LAYERS = "all"


@dataclass
class SplitPlan:
    """What SPLIT_MODE=tensor adds to the launch; ``on`` false = nothing but notes."""

    on: bool = False
    args: list[str] = field(default_factory=list)  # argv item 13: -sm tensor [-ts ...] [-fa on]
    ngl_args: list[str] = field(default_factory=list)  # argv item 11 when on: ["-ngl", "all"] or []
    env: dict[str, str] = field(default_factory=dict)
    notes: list[Note] = field(default_factory=list)


@dataclass
class _Accepted:
    devices: list[SplitDev]
    need_mib: int
    ngl_args: list[str]


class _Refused(Exception):
    """Carries the first failing condition out of the check chain."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


def tensor_split_percentages(totals: Sequence[int]) -> list[int]:
    """Each card's share of the total VRAM in percent, rounded half away from zero.

    Total VRAM rather than free VRAM: free memory depends on what is still
    running at launch. Empty when the total is not positive.
    """
    total = sum(totals)
    if total <= 0:
        return []
    return [_round_half_away(100 * t / total) for t in totals]


def _round_half_away(x: float) -> int:
    # Exact on the float value (like Go's math.Round), unlike floor(x + 0.5).
    magnitude = abs(x)
    whole = math.floor(magnitude)
    if magnitude - whole >= 0.5:
        whole += 1
    return -whole if x < 0 else whole


def _is_all_layers(value: str, block_count: int) -> bool:
    """``all``, the 999 sentinel, or a count covering every block plus the output layer."""
    value = value.strip().lower()
    if value in (_ALL_LAYERS, "999"):
        return True
    n = parse_int(value)
    return n is not None and block_count > 0 and n >= block_count + 1


def _split_ngl(preset: Mapping[str, str], extra: Sequence[str], block_count: int) -> list[str]:
    """GPU-layer flags for tensor mode, where every layer must sit on the cards."""
    written = flag_value(extra, *NGL_FLAGS)
    if written:
        if _is_all_layers(written, block_count):
            return []  # the user's own -ngl already says "all"
        raise _Refused(f"-ngl {written} in EXTRA_ARGS: tensor mode wants all layers on the cards (all)")
    ngl = preset.get("NGL", "").strip()
    # auto does nothing without --fit, so it becomes an explicit "all".
    if ngl == "" or ngl.lower() == "auto" or _is_all_layers(ngl, block_count):
        return ["-ngl", _ALL_LAYERS]
    raise _Refused(f"NGL={ngl}: tensor mode wants all layers on the cards (all)")


def _split_devices(extra: Sequence[str], facts: HostFacts) -> list[SplitDev]:
    """The cards to split over, in the engine's order or the --device order."""
    listed = list(facts.split_devs)
    if not listed:
        raise _Refused("cards unknown (--list-devices returned nothing)")
    selection = (flag_value(extra, *DEVICE_FLAGS) or facts.arg_env.get("LLAMA_ARG_DEVICE", "")).strip()
    devices = listed
    if selection:
        devices = []
        for raw_name in selection.split(","):
            name = raw_name.strip()
            match = next((d for d in listed if d.id.lower() == name.lower()), None)
            if match is None:
                raise _Refused(f"--device {name} unknown to this engine")
            devices.append(match)
    for dev in devices:
        # The all-reduce only exists between CUDA cards.
        if not dev.id.upper().startswith("CUDA"):
            raise _Refused(f"{dev.id} is not a CUDA card")
    if len(devices) < 2:
        raise _Refused("a single card")
    return devices


def _kv_name(kv_type: str) -> str:
    return kv_type or "f16"


def _check(preset: Mapping[str, str], extra: Sequence[str], facts: HostFacts) -> _Accepted:
    """Steps 2-17 of section 13.10, in order; raises _Refused at the first failing one."""
    k_type, v_type = _check_launch(preset, extra, facts)
    gguf, ngl = _check_model(preset, extra, facts)
    devices = _split_devices(extra, facts)
    need_mib = _check_fit(preset, extra, facts, gguf=gguf, kv_types=(k_type, v_type), devices=devices)
    return _Accepted(devices=devices, need_mib=need_mib, ngl_args=ngl)


def _check_launch(preset: Mapping[str, str], extra: Sequence[str], facts: HostFacts) -> tuple[str, str]:
    """The engine and the launch allow tensor mode (steps 2-9); the KV cache types."""
    arg_env = facts.arg_env
    if is_external(preset):
        raise _Refused("external preset")
    if not supports_tensor_split_mode(facts.help):
        raise _Refused("this engine does not offer -sm tensor")
    written_mode = flag_value(extra, *SPLIT_MODE_FLAGS)
    if written_mode:
        raise _Refused(f"-sm {written_mode} already in EXTRA_ARGS")
    if arg_env.get("LLAMA_ARG_SPLIT_MODE", ""):
        raise _Refused("LLAMA_ARG_SPLIT_MODE already set")
    flash_attn = flag_value(extra, *_FA_FLAGS) or arg_env.get("LLAMA_ARG_FLASH_ATTN", "")
    if flash_attn.strip().lower() in OFF_WORDS:
        raise _Refused(f"Flash Attention off (-fa {flash_attn}): tensor mode requires it")
    if has_any_flag(extra, "-bs", "--backend-sampling") or env_truthy(arg_env.get("LLAMA_ARG_BACKEND_SAMPLING")):
        raise _Refused("GPU sampling (--backend-sampling) not supported in tensor mode")
    k_type, v_type = effective_kv_types(preset, extra, arg_env)[:2]
    if k_type.strip().lower() not in _SPLIT_KV_TYPES or v_type.strip().lower() not in _SPLIT_KV_TYPES:
        # Never rewritten for the user: another cache type changes the VRAM budget.
        raise _Refused(
            f"KV cache {_kv_name(k_type)}/{_kv_name(v_type)}: tensor mode only accepts f16, bf16 or f32 "
            "(never rewritten automatically: the VRAM would change)"
        )
    override = tensor_override(extra, arg_env)
    if override:
        raise _Refused(f"{override}: tensor mode puts everything on the cards")
    if not kv_offloaded(extra, arg_env):
        raise _Refused(KV_ON_CPU)
    return k_type, v_type


def _check_model(preset: Mapping[str, str], extra: Sequence[str], facts: HostFacts) -> tuple[GGUFInfo, list[str]]:
    """The model and the preset allow tensor mode (steps 10-15); the model's header and the layers flag."""
    gguf = facts.gguf
    if gguf is None or facts.model_bytes <= 0:
        raise _Refused("model metadata or size unreadable")
    if gguf.arch.lower() in SPLIT_DENY_ARCHS:
        raise _Refused(f"architecture {gguf.arch} excluded from tensor mode")
    ngl = _split_ngl(preset, extra, gguf.block_count)
    ctx_written, fixed = ctx_fixed(preset, extra)
    if not fixed:
        raise _Refused(f'context "{ctx_written}" is not a token count: no --fit in tensor mode, give an explicit CTX')
    if side_slot_on(preset):
        raise _Refused("SIDE_SLOT: doubled cache, and no --fit to make up for it")
    if spec_mode(preset) != SPEC_OFF or spec_user_set(extra, facts.arg_env):
        raise _Refused("speculative decoding: draft and batch verification not validated in tensor mode")
    return gguf, ngl


def _check_fit(preset: Mapping[str, str], extra: Sequence[str], facts: HostFacts, *, gguf: GGUFInfo,
               kv_types: tuple[str, str], devices: list[SplitDev]) -> int:
    """Weights + projector + cache of CTX tokens (+ recurrent state) against 90 % of the cards (step 17).

    Compute buffers are not counted: a floor, not a promise. Returns the need in MiB.
    """
    per_token, recurrent = state_bytes(gguf, *kv_types)
    if per_token <= 0:
        raise _Refused("KV cache size unknown for this model")
    ctx = serve_ctx(preset, extra, gguf)
    total_mib = sum(d.total_mib for d in devices)
    need = float(facts.model_bytes + facts.mmproj_bytes) + per_token * ctx + float(recurrent)
    need_mib = ceil_mib(need)
    if need > _VRAM_MARGIN * float(total_mib) * MIB:
        raise _Refused(
            f"not enough VRAM without --fit: ~{need_mib} MiB (weights + cache of {ctx} tokens) "
            f"for {total_mib} MiB on {len(devices)} cards — CTX is never reduced automatically"
        )
    return need_mib


def _allreduce(user_env: Mapping[str, str]) -> tuple[dict[str, str], str]:
    """(env to add, note fragment) for the all-reduce backend."""
    chosen = user_env.get(_ALLREDUCE, "").strip().lower()
    if chosen == "":
        return {_ALLREDUCE: "internal"}, (
            f"{_ALLREDUCE}=internal: partial sums added in their native type (NCCL would compress partial "
            "sums to BF16 above 32768 elements, a lossy step at every layer of every prefill, so internal is used); "
            '"NCCL not compiled in" or "NCCL is unavailable" in the log is harmless here; GeForce cards without '
            "P2P route the sums through the host, set GGML_CUDA_P2P=1 yourself if the driver allows it"
        )
    if chosen == "nccl":
        return {}, (
            f"warning: {_ALLREDUCE}=nccl (environment): NCCL compresses the large prefill reductions to BF16, "
            'a lossy computation; "NCCL not compiled in" in the log means the internal reduction is used instead'
        )
    return {}, f"{_ALLREDUCE}={chosen} (environment) kept as set"


def split_plan(preset: Mapping[str, str], extra: Sequence[str], facts: HostFacts) -> SplitPlan:
    """Decide SPLIT_MODE=tensor for this launch (spec section 13.10)."""
    mode = split_mode_key(preset)
    if mode == SPLIT_NONE:
        return SplitPlan()
    try:
        if mode == SPLIT_UNREADABLE:
            raise _Refused(f"SPLIT_MODE={preset.get('SPLIT_MODE', '').strip()} unreadable (tensor or off)")
        accepted = _check(preset, extra, facts)
    except _Refused as refusal:
        return SplitPlan(
            notes=[Note("split.refused", f"SPLIT_MODE=tensor refused ({refusal.why}): layer split, as without the key")]
        )

    args = ["-sm", "tensor"]
    ts_text = ""
    if not has_any_flag(extra, *_TS_FLAGS) and not facts.arg_env.get("LLAMA_ARG_TENSOR_SPLIT", ""):
        ts_text = ",".join(str(p) for p in tensor_split_percentages([d.total_mib for d in accepted.devices]))
        if ts_text:
            args += ["-ts", ts_text]
    # llama.cpp turns Flash Attention on by itself in tensor mode; writing it
    # makes that visible in the log. Never doubles the user's own -fa.
    if not has_any_flag(extra, *_FA_FLAGS) and not facts.arg_env.get("LLAMA_ARG_FLASH_ATTN", ""):
        args += ["-fa", "on"]

    env, allreduce_text = _allreduce(facts.user_env)
    text = f"SPLIT_MODE=tensor (experimental): -sm tensor on {len(accepted.devices)} cards"
    if ts_text:
        text += f", -ts {ts_text} (total VRAM)"
    text += f", ~{accepted.need_mib} MiB estimated without --fit; {allreduce_text}"
    if facts.gguf is not None and facts.gguf.hybrid:
        text += " ; hybrid model: recurrent state and checkpoints split across cards, not validated upstream"
    return SplitPlan(on=True, args=args, ngl_args=accepted.ngl_args, env=env, notes=[Note("split.accepted", text)])
