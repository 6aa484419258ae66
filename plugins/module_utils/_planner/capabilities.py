"""What an engine accepts, read from the text of ``llama-server --help``.

Spec section 5.1. All tests are case-sensitive substring tests on the help
text; an empty help (unknown engine) answers "no" everywhere, which selects
the oldest, safest form of every flag: an unknown flag makes llama-server exit
at start, which under systemd is a restart loop.
"""

from __future__ import annotations

import re

_FIT_FLAG = re.compile(r"(?:^|[\s,])--fit(?:[\s,=\[]|$)")
_MMAP_FLAG = re.compile(r"(?:^|[\s,])--mmap(?:[\s,]|$)")
_NGL_AUTO_WINDOW = 400


def supports_reasoning(help_text: str) -> bool:
    return "--reasoning " in help_text


def supports_load_mode(help_text: str) -> bool:
    return "--load-mode" in help_text


def _ngl_help(help_text: str) -> str:
    """The help text from the first --n-gpu-layers (else -ngl) over the 400-character window; "" if none."""
    i = help_text.find("--n-gpu-layers")
    if i < 0:
        i = help_text.find("-ngl")
    return help_text[i:i + _NGL_AUTO_WINDOW] if i >= 0 else ""


def supports_ngl_auto(help_text: str) -> bool:
    """``-ngl auto``: the help around the first -ngl mentions 'auto'."""
    return "'auto'" in _ngl_help(help_text)


def supports_ngl_all(help_text: str) -> bool:
    """``-ngl all``: the help around the first -ngl mentions 'all' (older engines read a number only)."""
    return "'all'" in _ngl_help(help_text)


def supports_mmap_switch(help_text: str) -> bool:
    """A ``--mmap`` switch of its own (``--no-mmap`` alone does not count)."""
    return bool(_MMAP_FLAG.search(help_text))


def fits_layers_itself(help_text: str) -> bool:
    # --load-mode shipped in the same release wave as -ngl auto and does not
    # depend on how the help text is laid out: a second, coarser witness.
    return supports_ngl_auto(help_text) or supports_load_mode(help_text)


def supports_fit(help_text: str) -> bool:
    """``--fit`` itself (``--fit-target`` alone does not count)."""
    return bool(_FIT_FLAG.search(help_text))


def supports_fit_target(help_text: str) -> bool:
    return "--fit-target" in help_text


def supports_cache_ram(help_text: str) -> bool:
    return "--cache-ram" in help_text


def supports_slot_save_path(help_text: str) -> bool:
    return "--slot-save-path" in help_text


def supports_ctx_checkpoints(help_text: str) -> bool:
    return "--ctx-checkpoints" in help_text


def supports_checkpoint_min_step(help_text: str) -> bool:
    return "--checkpoint-min-step" in help_text


def supports_reasoning_preserve(help_text: str) -> bool:
    return "--no-reasoning-preserve" in help_text


def supports_no_kv_unified(help_text: str) -> bool:
    return "--no-kv-unified" in help_text


def supports_tensor_split_mode(help_text: str) -> bool:
    # The word "tensor" alone appears in --tensor-split and --override-tensor.
    return "{none,layer,row,tensor}" in help_text


def supports_mtp(help_text: str) -> bool:
    return "draft-mtp" in help_text and "--spec-draft-n-max" in help_text


def supports_draft_simple(help_text: str) -> bool:
    return "--spec-type" in help_text and "draft-simple" in help_text


def supports_spec_n_max(help_text: str) -> bool:
    return "--spec-draft-n-max" in help_text


def supports_spec_sampling(help_text: str) -> bool:
    return "--spec-draft-sampling" in help_text


def supports_probabilistic(help_text: str) -> bool:
    return "probabilistic" in help_text


def supports_ngram_mod(help_text: str) -> bool:
    return "--spec-ngram-mod-n-match" in help_text


def old_context_shift_default(help_text: str) -> bool:
    """Old engines shift the context by default and only know the off switch."""
    return "--no-context-shift" in help_text and "--context-shift" not in help_text


def supports_api_key_file(help_text: str) -> bool:
    return "--api-key-file" in help_text


_FLASH_ATTN_LINE = re.compile(r"^.*--flash-attn.*$", re.MULTILINE)
_FLASH_ATTN_VALUE = re.compile(r"--flash-attn\s+(?:\[|\{|<|[A-Z]{1,12}\b)")


def flash_attn_is_switch(help_text: str) -> bool:
    """Older engines: ``-fa`` is an off-by-default switch; newer ones take on|off|auto (auto by default)."""
    line = _FLASH_ATTN_LINE.search(help_text)
    return line is not None and not _FLASH_ATTN_VALUE.search(line.group(0))


def lists_flag(help_text: str, name: str) -> bool:
    """The help lists ``name`` as a flag (llama.cpp also reads ``_`` as ``-`` in long names)."""
    candidates = {name, name.replace("_", "-")} if name.startswith("--") else {name}
    return any(re.search(r"(?<![\w-])" + re.escape(c) + r"(?![\w-])", help_text) for c in candidates)
