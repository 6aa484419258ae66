"""Quoting for systemd unit files (pure).

systemd.service(5) parses ExecStart= itself: whitespace splits words, quotes
group them, backslash escapes are C-style, ``%`` starts a specifier and ``$``
an environment substitution. An argv copied verbatim would change meaning (a
model path with a space, a chat template with ``%``), so every word is escaped
for those four mechanisms.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-+=:,./@^~")
_C_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r", "\a": "\\a", "\b": "\\b",
              "\f": "\\f", "\v": "\\v"}


class UnitValueError(ValueError):
    """A value that cannot be written into a unit file (e.g. a NUL byte)."""


def _escape(text: str) -> str:
    out = []
    for ch in text:
        if ch == "\0":
            raise UnitValueError("a NUL byte cannot be written into a unit file")
        if ch in _C_ESCAPES:
            out.append(_C_ESCAPES[ch])
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    return "".join(out).replace("%", "%%")


def quote_exec_word(word: str) -> str:
    """One argv word as systemd will read it back unchanged (ExecStart=)."""
    if word and all(ch in _SAFE for ch in word):
        return word.replace("%", "%%")
    return '"' + _escape(word).replace("$", "$$") + '"'


def exec_start(argv: Iterable[str]) -> str:
    """argv -> the value of ExecStart= (no prefix characters)."""
    words = list(argv)
    if not words or not words[0].startswith("/"):
        raise UnitValueError("ExecStart needs an absolute executable path first")
    if words[0][0] in "@-:+!":
        raise UnitValueError("the executable path must not start with a systemd prefix character")
    return " ".join(quote_exec_word(w) for w in words)


def environment_assignment(key: str, value: str) -> str:
    """KEY=value as one quoted word for Environment= (no $ expansion there)."""
    if not key or not all(ch.isalnum() or ch == "_" for ch in key) or key[0].isdigit():
        raise UnitValueError(f"{key!r} is not a valid environment variable name")
    return '"' + _escape(f"{key}={value}") + '"'


def environment_lines(env: Mapping[str, str]) -> list[str]:
    """One ``Environment=`` line per variable, in the mapping's order."""
    return ["Environment=" + environment_assignment(k, v) for k, v in env.items()]
