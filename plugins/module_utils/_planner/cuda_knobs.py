"""Expert GGML knobs passed through the environment (spec sections 8.4, 8.5).

CUDA_GRAPH_OPT and OP_OFFLOAD_MIN_BATCH only change where and how the same
computation runs (no weights, context or sampling change), and only when the
preset asks for them. A GGML_* variable already in the service environment is
the user's choice: it is never overridden and no note is given.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.argv_tokens import flag_values, parse_int
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.facts import HostFacts
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.notes import Note
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.placement import OT_FLAGS, split_mode_written

GRAPH_OPT_ENV = "GGML_CUDA_GRAPH_OPT"
OP_OFFLOAD_ENV = "GGML_OP_OFFLOAD_MIN_BATCH"
OP_OFFLOAD_MIN = 1
OP_OFFLOAD_MAX = 1 << 20
# llama.cpp sends weights left in RAM to the GPU for batches of at least this many tokens.
ENGINE_OP_OFFLOAD_DEFAULT = 32


def _user_set(facts: HostFacts, key: str) -> bool:
    # Go semantics: the probe only records non-empty values, so "set" = non-empty.
    return facts.user_env.get(key, "") != ""


def qkv_split_risk(place: Sequence[str], arg_env: Mapping[str, str]) -> str:
    """Why one layer's Q, K and V could land on different devices, else ``""``.

    Row and tensor split cut layers; an ``-ot`` rule mentioning attention moves
    attention tensors by hand. Layer split (the default, with or without
    --tensor-split) keeps every layer whole, and expert-only ``-ot`` is harmless.
    """
    mode = split_mode_written(place, arg_env)
    if mode in ("row", "tensor"):
        return f"-sm {mode}"
    for value in [*flag_values(place, *OT_FLAGS), arg_env.get("LLAMA_ARG_OVERRIDE_TENSOR", "")]:
        if "attn" in value.lower():
            return "-ot on attention tensors"
    return ""


def graph_opt_env(preset: Mapping[str, str], place: Sequence[str], facts: HostFacts) -> tuple[str, list[Note]]:
    """CUDA_GRAPH_OPT=on -> GGML_CUDA_GRAPH_OPT=1 (spec section 8.4).

    ``place`` is the placement view of EXTRA_ARGS (plus ``-sm tensor`` when
    tensor split was accepted). Returns the value to set (``"1"`` or ``""``)
    and the notes.
    """
    raw = preset.get("CUDA_GRAPH_OPT", "").strip()
    word = raw.lower()
    if word in ("", "off"):
        return "", []
    if word != "on":
        return "", [Note("graphopt.invalid", f"CUDA_GRAPH_OPT={raw} ignored (on or off)")]
    if _user_set(facts, GRAPH_OPT_ENV):
        return "", []
    why = qkv_split_risk(place, facts.arg_env)
    if why:
        # Concurrent Q/K/V streams are only exact when the three stay on one device.
        code = "split_mode" if why.startswith("-sm") else "override_tensor"
        return "", [
            Note(
                "graphopt.refused",
                f"CUDA_GRAPH_OPT ignored: {why} can split a layer's Q, K and V across cards",
                code=code,
            )
        ]
    return "1", [
        Note(
            "graphopt.set",
            "GGML_CUDA_GRAPH_OPT=1 (CUDA_GRAPH_OPT, experimental) — if the engine stops on a GGML_ASSERT, "
            "set CUDA_GRAPH_OPT=off and restart",
        )
    ]


def op_offload_min_batch_env(preset: Mapping[str, str], facts: HostFacts) -> tuple[str, list[Note]]:
    """OP_OFFLOAD_MIN_BATCH -> GGML_OP_OFFLOAD_MIN_BATCH (spec section 8.5).

    Returns the value to set (the integer as text, ``""`` for none) and the notes.
    """
    raw = preset.get("OP_OFFLOAD_MIN_BATCH", "").strip()
    if raw == "" or _user_set(facts, OP_OFFLOAD_ENV):
        return "", []
    n = parse_int(raw)
    if n is None or not OP_OFFLOAD_MIN <= n <= OP_OFFLOAD_MAX:
        return "", [Note("opoffload.invalid", f"OP_OFFLOAD_MIN_BATCH={raw} ignored: a token count, e.g. 128")]
    value = str(n)
    return value, [
        Note(
            "opoffload.set",
            f"GGML_OP_OFFLOAD_MIN_BATCH={value} (OP_OFFLOAD_MIN_BATCH): batches under {value} tokens "
            "computed on CPU for weights left in RAM",
        )
    ]


def op_offload_threshold(preset: Mapping[str, str], facts: HostFacts) -> int:
    """Batch size from which the engine copies RAM-resident weights to the GPU.

    Used by the n-gram blocker (spec section 13.5). In order: the service
    environment's GGML_OP_OFFLOAD_MIN_BATCH when it is a positive integer
    (after trimming); else the value :func:`op_offload_min_batch_env` would set
    from OP_OFFLOAD_MIN_BATCH; else the engine default, 32. A variable set in
    the environment to anything else (``0``, text) also gives 32: the preset key
    is then ignored by :func:`op_offload_min_batch_env` as well.
    """
    text = facts.user_env.get(OP_OFFLOAD_ENV, "").strip()
    if text == "":
        text = op_offload_min_batch_env(preset, facts)[0]
    n = parse_int(text)
    if n is not None and n > 0:
        return n
    return ENGINE_OP_OFFLOAD_DEFAULT
