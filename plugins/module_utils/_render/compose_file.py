# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One planned instance as its compose file's text: the plan's notes as comments, then the service in YAML.

Pure, and written on the target (the instance step and the host judge render the file where they judge it), where
no YAML library can be counted on. So the YAML is written here, in one deliberately plain form that needs no
library to be right: block mappings and sequences, every string double-quoted and escaped to ASCII, keys bare
only when they read as plain strings in YAML 1.1 and 1.2 alike (no key turns into a boolean or a number). A
property test reads any such document back with PyYAML; compose's own parser checks every file before it is
written (``docker compose config``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.notes import Note
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._render.compose_service import (
    ServiceSpec,
    compose_fragment,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils.planner import Plan

# A key written bare: a plain word that no YAML version reads as anything but a string.
_BARE_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")
_NOT_BARE = frozenset({"y", "n", "yes", "no", "on", "off", "true", "false", "null"})
INDENT = "  "


def _key(key) -> str:
    text = str(key)
    if _BARE_KEY.fullmatch(text) and text.lower() not in _NOT_BARE:
        return text
    return _quoted(text)


_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r"}


def _quoted(text: str) -> str:
    """A YAML double-quoted scalar in ASCII: printable ASCII as it is, everything else escaped (a character beyond
    the BMP as one \\U escape, which YAML reads whole, where JSON would write a surrogate pair)."""
    out = []
    for char in text:
        code = ord(char)
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif 0x20 <= code < 0x7F:
            out.append(char)
        elif code <= 0xFFFF:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    return '"' + "".join(out) + '"'


def _scalar(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return _quoted(value)
    # A compose service holds strings, integers and booleans only; anything else would need a rule of its own.
    raise ValueError(f"a compose file holds no {type(value).__name__} value ({value!r})")


def _is_scalar(value) -> bool:
    return not isinstance(value, (Mapping, list, tuple)) or not value


def _empty(value) -> str:
    return "{}" if isinstance(value, Mapping) else "[]"


# YAML reads a key written before its colon (an implicit key) only up to 1024 characters; a longer one is written
# as an explicit key, "? key" then ": value" on the next line.
_LONGEST_IMPLICIT_KEY = 1000


def _key_lead(pad: str, key: str) -> str:
    return f"{pad}{key}:" if len(key) <= _LONGEST_IMPLICIT_KEY else f"{pad}? {key}\n{pad}:"


def yaml_lines(value, depth: int = 0) -> list[str]:
    """A mapping or sequence as block YAML lines, ``depth`` levels in."""
    pad = INDENT * depth
    lines: list[str] = []
    items = value.items() if isinstance(value, Mapping) else ((None, item) for item in value)
    for key, item in items:
        lead = _key_lead(pad, _key(key)) if isinstance(value, Mapping) else f"{pad}-"
        if _is_scalar(item):
            text = _empty(item) if isinstance(item, (Mapping, list, tuple)) else _scalar(item)
            lines.append(f"{lead} {text}")
        elif isinstance(value, Mapping) or not isinstance(item, Mapping):
            lines.append(lead)
            lines += yaml_lines(item, depth + 1)
        else:
            # A mapping in a sequence starts on the dash's line: "- key: value", its other keys under the first.
            nested = yaml_lines(item, depth + 1)
            lines += [f"{pad}- {nested[0][len(pad) + len(INDENT):]}", *nested[1:]]
    return lines


def _one_line(text) -> str:
    """Free text as one comment line in ASCII: blanks (line breaks included) as one space, then every other
    character outside printable ASCII escaped as in a double-quoted string. YAML parsers refuse control characters
    even in comments (compose: "control characters are not allowed"), and some read U+2028 as a line break."""
    return "".join(char if 0x20 <= ord(char) < 0x7F else _quoted(char)[1:-1] for char in " ".join(str(text).split()))


def compose_file_text(name: str, plan: Plan, spec: ServiceSpec, project: str,
                      managed: str = "Ansible managed") -> str:
    """The file; raises ComposeError when the plan cannot run as a compose service."""
    fragment = compose_fragment([str(w) for w in plan.argv], plan.env, plan.decisions, spec)
    lines = [
        f"# {_one_line(managed)}",
        f"# llamafleet.llamacpp.llama_server: instance {name} of compose project {project}",
        "# The command below was planned by llamafleet.llamacpp.llama_server_plan; why:",
    ]
    lines += note_comments(plan.notes, plan.warnings)
    return "\n".join([*lines, *yaml_lines(fragment)]) + "\n"


def note_comments(notes: Sequence[Note], warnings: Sequence[Note]) -> list[str]:
    lines = [f"# [{_one_line(note.id)}] {_one_line(note.text)}" for note in notes]
    return lines + [f"# warning [{_one_line(note.id)}] {_one_line(note.text)}" for note in warnings]
