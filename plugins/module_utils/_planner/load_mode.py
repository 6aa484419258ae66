"""Load-flag translation between llama.cpp generations (spec section 6).

Recent engines merged ``--mlock`` / ``--mmap`` / ``--no-mmap`` into a single
``--load-mode`` and refuse the old switches; older engines and forks only know
the old switches and refuse ``--load-mode``. A preset may carry either form, so
EXTRA_ARGS is rewritten into the form this binary accepts before anything else
reads it.
"""

from __future__ import annotations

from collections.abc import Sequence

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.argv_tokens import has_any_flag
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.notes import Note

_OLD_FLAGS = ("--mlock", "--no-mmap", "--mmap")
_LOAD_MODE_FLAGS = ("--load-mode", "-lm")
_LOAD_MODE_EQ = "--load-mode="

# Old switches that reproduce each load mode on an engine without --load-mode.
# auto, mmap and unknown modes need nothing: mmap is the old engines' default.
_OLD_FLAGS_FOR_MODE: dict[str, tuple[str, ...]] = {
    "none": ("--no-mmap",),
    "mlock": ("--mlock", "--no-mmap"),
    "mmap+mlock": ("--mlock",),
}

DIO_DROPPED_TEXT = "this engine does not know --load-mode dio (DirectIO): default loading"


def normalize_load_flags(
    extra: Sequence[str], supports_load_mode: bool, knows_mmap: bool = True
) -> tuple[list[str], Note | None]:
    """EXTRA_ARGS in the load-flag form this engine understands.

    Returns a new token list (the input is never modified) and the
    ``load.dio_dropped`` note when a DirectIO request had to be dropped.
    ``knows_mmap``: an engine without --load-mode still has a ``--mmap``
    switch. Older ones only have ``--no-mmap`` and exit on ``--mmap``, which
    asks for their default anyway: it is dropped there (a deliberate
    difference from the spec, which leaves it in place).
    """
    if supports_load_mode:
        return _upgrade(extra)
    kept, note = _downgrade(extra)
    if not knows_mmap:
        kept = [tok for tok in kept if tok != "--mmap"]
    return kept, note


def _upgrade(extra: Sequence[str]) -> tuple[list[str], Note | None]:
    """Old switches -> one ``--load-mode`` appended at the end, with a note naming both.

    The spec rewrites silently; a rewritten command line is worth a line of its own here, since the unit
    and ``ps`` then show words the user never wrote.
    """
    explicit = has_any_flag(extra, *_LOAD_MODE_FLAGS)
    written = [tok for tok in extra if tok in _OLD_FLAGS]
    present = set(written)
    kept = [tok for tok in extra if tok not in _OLD_FLAGS]
    if not present:
        return kept, None
    old = " ".join(dict.fromkeys(written))
    # A --load-mode the user wrote wins: the old switches are only dropped.
    if explicit:
        return kept, Note(
            "load.rewritten",
            f"EXTRA_ARGS: {old} dropped (this engine replaced them by --load-mode, which EXTRA_ARGS sets)",
        )
    mlock = "--mlock" in present
    no_mmap = "--no-mmap" in present
    if mlock and no_mmap:
        mode = "mlock"  # llama.cpp's "mlock" already means: no mmap, resident
    elif mlock:
        # The legacy --mlock kept mmap; "mlock" alone would read the whole model into RAM.
        mode = "mmap+mlock"
    elif no_mmap:
        mode = "none"
    else:
        mode = "mmap"
    return [*kept, "--load-mode", mode], Note(
        "load.rewritten", f"EXTRA_ARGS: {old} → --load-mode {mode} (this engine replaced the old switches)"
    )


def _downgrade(extra: Sequence[str]) -> tuple[list[str], Note | None]:
    """``--load-mode`` -> the old switches (an unknown flag would stop the engine)."""
    found = False
    mode = ""
    kept: list[str] = []
    i = 0
    while i < len(extra):
        tok = extra[i]
        if tok in _LOAD_MODE_FLAGS:
            found = True
            # The next token is the value whatever it looks like; a trailing
            # flag without one keeps the mode read so far.
            if i + 1 < len(extra):
                mode = extra[i + 1].lower()
                i += 1
        elif tok.startswith(_LOAD_MODE_EQ):
            # Only the long form is read with "=": "-lm=x" stays as written.
            found = True
            mode = tok[len(_LOAD_MODE_EQ) :].lower()
        else:
            kept.append(tok)
        i += 1
    if not found:
        return list(extra), None
    if mode == "dio":
        return kept, Note("load.dio_dropped", DIO_DROPPED_TEXT)
    for flag in _OLD_FLAGS_FOR_MODE.get(mode, ()):
        if flag not in kept:
            kept.append(flag)
    return kept, None
