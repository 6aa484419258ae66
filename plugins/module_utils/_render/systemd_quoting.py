"""Quoting for systemd unit files (pure).

systemd.service(5) parses ExecStart= itself: whitespace splits words, quotes
group them, backslash escapes are C-style, ``%`` starts a specifier and ``$``
an environment substitution. An argv copied verbatim would change meaning (a
model path with a space, a chat template with ``%``), so every word is escaped
for those four mechanisms.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._inputs import grammar

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


def path_value(path: str) -> str:
    """A path for a directive that takes one (WorkingDirectory=, ReadWritePaths=, EnvironmentFile=,
    LoadCredential=). systemd expands specifiers there but does not C-unescape (ReadWritePaths= would read
    ``\\t/srv`` as ``t/srv``), and some split at blanks: only a path of grammar.PATH_FORM is written, its ``%`` as
    ``%%``."""
    why = grammar.path_problem(path)
    if why:
        raise UnitValueError(f"the path {path!r} cannot be written into a unit: {why}; accepted: {grammar.PATH_FORM}")
    return path.replace("%", "%%")


def account_value(name: str) -> str:
    """A User= or Group= name (grammar.ACCOUNT: no specifier, blank, backslash or line break can reach it)."""
    if not grammar.ACCOUNT.fullmatch(name):
        raise UnitValueError(f"{name!r} cannot be User= or Group=; accepted: {grammar.ACCOUNT_FORM}")
    return name


def comment_text(text: str) -> str:
    """Free text on one comment line: every run of blanks (line breaks, \\r included) as one space, and no
    backslash last, which would join the next line to the comment."""
    line = " ".join(str(text).split())
    return line + "." if line.endswith("\\") else line
