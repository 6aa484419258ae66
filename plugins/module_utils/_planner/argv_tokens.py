"""Command-line token helpers shared by every rule (spec section 1.6).

llama-server keeps the last occurrence of a single-valued flag, and the user's
EXTRA_ARGS always come last; these helpers answer "did the user already
decide?" the same way everywhere.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence


def flag_name(token: str) -> str:
    """The flag part of ``name=value``; a leading ``=`` is not a separator."""
    i = token.find("=")
    return token[:i] if i > 0 else token


def has_any_flag(tokens: Iterable[str], *names: str) -> bool:
    """True when a token (or the name part of ``name=value``) is one of names."""
    wanted = set(names)
    return any(flag_name(t) in wanted for t in tokens)


def flag_values(tokens: Sequence[str], *names: str) -> list[str]:
    """Values of every occurrence of the flags, in order.

    ``name=value`` gives ``value``; ``name`` followed by a token gives that
    token, whatever it looks like; a trailing ``name`` gives nothing.
    """
    wanted = set(names)
    out: list[str] = []
    for i, tok in enumerate(tokens):
        eq = tok.find("=")
        if eq > 0 and tok[:eq] in wanted:
            out.append(tok[eq + 1:])
        elif tok in wanted and i + 1 < len(tokens):
            out.append(tokens[i + 1])
    return out


def flag_value(tokens: Sequence[str], *names: str) -> str:
    """Value of the last occurrence of any of the flags, ``""`` when absent."""
    values = flag_values(tokens, *names)
    return values[-1] if values else ""


def has_flag_prefix(tokens: Iterable[str], *prefixes: str) -> str:
    """Name part of the first token starting with one of prefixes, else ``""``."""
    for tok in tokens:
        if tok.startswith(prefixes):
            return flag_name(tok)
    return ""


def arg_value(argv: Sequence[str], flag: str) -> str:
    """Value after the last exact ``flag`` token (no ``=`` form)."""
    value = ""
    for i in range(len(argv) - 1):
        if argv[i] == flag:
            value = argv[i + 1]
    return value


def env_truthy(value: str | None) -> bool:
    """llama.cpp's reading of a boolean variable: on/enabled/true/1 only."""
    return (value or "").strip() in ("on", "enabled", "true", "1")


_INT64_MAX = (1 << 63) - 1
# llama.cpp reads every integer flag (-t, -tb, -c, --cache-ram, --ctx-checkpoints,
# --checkpoint-min-step, ...) with std::stoi: beyond a C int it throws and the
# engine exits at start, a restart loop under systemd.
C_INT_MAX = (1 << 31) - 1


def parse_int(text: str) -> int | None:
    """Strict decimal integer (optional sign, ASCII digits, 64-bit range).

    Python's int() also takes spaces, underscores and non-ASCII digits, which
    llama.cpp's std::stoi/stoull would not; None when the text is not a number.
    """
    body = text[1:] if text[:1] in ("+", "-") else text
    if not body or not body.isascii() or not body.isdigit():
        return None
    value = int(text)
    if value > _INT64_MAX or value < -_INT64_MAX - 1:
        return None
    return value


def parse_c_int(text: str) -> int | None:
    """:func:`parse_int` limited to a C ``int``, what llama.cpp's std::stoi accepts.

    For preset values the planner writes into an integer flag: a larger number
    would stop the engine at start, so it counts as unreadable.
    """
    value = parse_int(text)
    if value is None or not -C_INT_MAX - 1 <= value <= C_INT_MAX:
        return None
    return value
