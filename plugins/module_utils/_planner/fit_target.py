"""FIT_TARGET -> --fit-target: free VRAM --fit leaves on each card (spec section 8.3).

On two unequal cards a wider margin on the slower one pushes layers to the
faster one. Placement only: same weights, cache types and context. The value
is never passed through raw: llama.cpp reads each field with std::stoull,
which throws on any stray character and kills the engine at start (a restart
loop under systemd or Docker).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.argv_tokens import has_any_flag
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.capabilities import supports_fit_target
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.context_size import ctx_fixed
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.facts import HostFacts
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.notes import Note
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.placement import fit_blocker

# llama.cpp's own default margin; tighter than that, --fit packs beyond what it
# can estimate and the first long prompt can end in a cudaMalloc failure.
FIT_TARGET_MIN_MIB = 1024
# llama.cpp rejects a list as long as its device limit; 8 stays well below it.
FIT_TARGET_MAX_VALUES = 8
FIT_TARGET_MAX_DIGITS = 7
_SEPARATORS = re.compile(r"[,/]")


def parse_fit_target(raw: str) -> tuple[list[int], bool, bool]:
    """Read FIT_TARGET: MiB per card, separated by ``,`` or ``/``.

    Returns (values, raised, ok). Valid: 1 to 8 fields, no doubled, leading or
    trailing separator, each field (trimmed) ASCII digits only, at most 7 of
    them. Values under 1024 are raised to 1024 (``raised`` says so). Invalid
    input gives ``([], False, False)``.
    """
    fields = [f for f in _SEPARATORS.split(raw) if f != ""]
    separators = raw.count(",") + raw.count("/")
    if not fields or len(fields) > FIT_TARGET_MAX_VALUES or separators != len(fields) - 1:
        return [], False, False
    values: list[int] = []
    raised = False
    for field in fields:
        digits = field.strip()
        if not digits or not (digits.isascii() and digits.isdigit()) or len(digits) > FIT_TARGET_MAX_DIGITS:
            return [], False, False
        mib = int(digits)
        if mib < FIT_TARGET_MIN_MIB:
            mib, raised = FIT_TARGET_MIN_MIB, True
        values.append(mib)
    return values, raised, True


def fit_target_args(preset: Mapping[str, str], place: Sequence[str], facts: HostFacts) -> tuple[list[str], list[Note]]:
    """``--fit-target v1,v2,...`` and its note, or one ``fit.ignored`` note.

    ``place`` is the placement view of EXTRA_ARGS (plus ``-sm tensor`` when
    tensor split was accepted, which keeps --fit off). Nothing is passed when
    the engine lacks the flag, the user already set the margin, the context is
    not a fixed token count (--fit could then shrink it), or --fit will not run.
    """
    raw = preset.get("FIT_TARGET", "").strip()
    if raw == "":
        return [], []

    def ignored(code: str, why: str) -> tuple[list[str], list[Note]]:
        return [], [Note("fit.ignored", f"FIT_TARGET={raw} ignored: {why}", code=code)]

    values, raised, ok = parse_fit_target(raw)
    if not ok:
        return ignored("invalid", "MiB per card, e.g. 1024,3072 (at most 8 values)")
    if not supports_fit_target(facts.help):
        # An unknown flag makes llama-server exit at start.
        return ignored("unsupported", "this engine does not know --fit-target")
    if has_any_flag(place, "-fitt", "--fit-target"):
        return ignored("extra", "--fit-target already in EXTRA_ARGS")
    if facts.arg_env.get("LLAMA_ARG_FIT_TARGET", ""):
        return ignored("env", "LLAMA_ARG_FIT_TARGET already set in the environment")
    ctx, fixed = ctx_fixed(preset, place)
    if not fixed:
        return ignored(
            "ctx", f'context "{ctx}" is not a fixed token count — --fit could shrink it to fit; set a numeric CTX'
        )
    why = fit_blocker(preset, place, facts)
    if why:
        return ignored("blocked", f"--fit inactive ({why}), the margin would do nothing")
    value = ",".join(str(mib) for mib in values)
    text = (
        f"--fit-target {value} (FIT_TARGET, MiB free per card, in the engine's order) — "
        "check 'offloaded N/N layers' in the log"
    )
    if raised:
        text += f"; margins under {FIT_TARGET_MIN_MIB} MiB raised to {FIT_TARGET_MIN_MIB}"
    return ["--fit-target", value], [Note("fit.set", text)]
