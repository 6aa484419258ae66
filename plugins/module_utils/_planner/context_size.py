"""The context and micro-batch the engine will open, read from the preset and EXTRA_ARGS (spec sections 1.6, 8.3)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.argv_tokens import (
    flag_value,
    parse_int,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.facts import GGUFInfo

DEFAULT_CTX = "32768"
DEFAULT_UBATCH = 512
CTX_FLAGS = ("-c", "--ctx-size")
UBATCH_FLAGS = ("-ub", "--ubatch-size")


def ctx_text(preset: Mapping[str, str], extra: Sequence[str]) -> str:
    """The context the engine will see, as written."""
    return flag_value(extra, *CTX_FLAGS) or preset.get("CTX", "").strip() or DEFAULT_CTX


def ctx_fixed(preset: Mapping[str, str], extra: Sequence[str]) -> tuple[str, bool]:
    """(context text, fixed): fixed = a token count > 0, so --fit cannot shrink it."""
    text = ctx_text(preset, extra)
    n = parse_int(text)
    return text, n is not None and n > 0


def serve_ctx(preset: Mapping[str, str], extra: Sequence[str], gguf: GGUFInfo | None) -> int:
    """Context in tokens; 0 = unknown; ``0`` written = the model's training context."""
    n = parse_int(ctx_text(preset, extra))
    if n is None or n < 0:
        return 0
    if n == 0 and gguf is not None:
        return gguf.context_length
    return n


def serve_ubatch(preset: Mapping[str, str], extra: Sequence[str]) -> int:
    text = flag_value(extra, *UBATCH_FLAGS) or preset.get("UBATCH", "").strip() or str(DEFAULT_UBATCH)
    n = parse_int(text)
    return 0 if n is None or n < 0 else n
