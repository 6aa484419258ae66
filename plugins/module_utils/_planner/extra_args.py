"""EXTRA_ARGS forms llama-server cannot read, rewritten into ones it can.

llama.cpp's argument parser looks each word up as a whole: ``--ctx-size=512``
is "invalid argument" and the server exits, under systemd in a restart loop.
Loki's own rules already read ``--flag=value`` as the flag with its value
(spec section 1.6), so writing it as two words changes nothing they decide.
Only flags the engine's help lists are split: a word the help does not know
is left as the user wrote it (it may be a value), and an unknown engine (no
help) is left alone.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.capabilities import lists_flag
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.notes import Note

_EQUALS_FORM = re.compile(r"^(-{1,2}[A-Za-z][A-Za-z0-9_-]*)=(.*)\Z", re.DOTALL)


def split_equals_forms(tokens: Sequence[str], help_text: str) -> tuple[list[str], Note | None]:
    """``--flag=value`` -> ``--flag value`` for flags the help lists; the note names them."""
    if not help_text:
        return list(tokens), None
    out: list[str] = []
    rewritten: list[str] = []
    for token in tokens:
        match = _EQUALS_FORM.match(token)
        if match and lists_flag(help_text, match.group(1)):
            out += [match.group(1), match.group(2)]
            rewritten.append(match.group(1))
        else:
            out.append(token)
    if not rewritten:
        return out, None
    names = ", ".join(dict.fromkeys(rewritten))
    return out, Note(
        "extra.equals_split",
        f"EXTRA_ARGS: {names} written as two words (llama-server does not read --flag=value and would exit)",
    )
