"""Preset input: Loki's config.env format, EXTRA_ARGS splitting, YAML dicts.

Spec section 2. The config.env reader mirrors Loki byte for byte so that a
preset file copied from a Loki host plans the same command line here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

_QUOTES = ('"', "'")
_BLANKS = (" ", "\t", "\n", "\r")


class PresetError(ValueError):
    """A preset value that cannot be turned into text (e.g. a YAML list)."""


def unquote_value(value: str) -> str:
    """Drop one surrounding pair of identical quotes, and only that pair."""
    if len(value) >= 2 and value[0] in _QUOTES and value[-1] == value[0]:
        return value[1:-1]
    return value


def parse_env(text: str) -> dict[str, str]:
    """config.env text -> preset map (spec section 2.1).

    One ``KEY=value`` per line; blank and ``#`` lines are skipped, a leading
    ``export `` is dropped, the first ``=`` splits, the last duplicate wins.
    No escapes, no expansion.
    """
    preset: dict[str, str] = {}
    for raw in text.split("\n"):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("export "):
            line = line[len("export "):]
        key, sep, value = line.partition("=")
        if not sep:
            continue
        preset[key.strip()] = unquote_value(value.strip())
    return preset


def quote_value(value: str) -> str:
    """How Loki writes a value back to config.env (spec section 2.2)."""
    if value == "" or '"' in value:
        return value
    if " " in value or "\t" in value or unquote_value(value) != value or value != value.strip():
        return '"' + value + '"'
    return value


def format_env(preset: Mapping[str, str]) -> str:
    """preset map -> config.env text, keys sorted; parse_env reverses it."""
    return "".join(f"{key}={quote_value(preset[key])}\n" for key in sorted(preset))


def split_args(text: str) -> list[str]:
    """EXTRA_ARGS -> tokens (spec section 2.3).

    Shell-like but simpler: blanks separate tokens outside quotes, a quote runs
    to the same quote character, quote characters are dropped, ``""`` alone is
    an empty token, no backslash escapes, an unterminated quote takes the rest.
    """
    tokens: list[str] = []
    current: list[str] = []
    in_token = False
    quote = ""
    for ch in text:
        if quote:
            if ch == quote:
                quote = ""
            else:
                current.append(ch)
            continue
        if ch in _QUOTES:
            quote = ch
            in_token = True
        elif ch in _BLANKS:
            if in_token:
                tokens.append("".join(current))
                current, in_token = [], False
        else:
            current.append(ch)
            in_token = True
    if in_token:
        tokens.append("".join(current))
    return tokens


def join_args(tokens: Sequence[str]) -> str:
    """tokens -> EXTRA_ARGS text that split_args reads back identically.

    Loki's rule (empty -> ``""``, blanks -> single quotes, or double quotes
    when the token holds a single quote), extended to tokens holding quotes.
    """
    out = []
    for tok in tokens:
        if tok == "":
            out.append('""')
        elif any(c in tok for c in _BLANKS + _QUOTES):
            out.append(_quote_token(tok))
        else:
            out.append(tok)
    return " ".join(out)


def _quote_token(tok: str) -> str:
    # split_args knows no escapes, so a token is written as adjacent quoted
    # runs, each holding at most one kind of quote and wrapped in the other.
    runs: list[str] = [""]
    for ch in tok:
        run = runs[-1]
        if ch in _QUOTES and ({'"', "'"} - {ch}) & set(run):
            runs.append(ch)
        else:
            runs[-1] = run + ch
    return "".join('"' + r + '"' if "'" in r else "'" + r + "'" for r in runs)


def _scalar_text(key: str, value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        # YAML 1.1 reads an unquoted on/off/yes/no as a boolean.
        return "on" if value else "off"
    if isinstance(value, (int, float, str)):
        return str(value)
    raise PresetError(
        f"preset key {key}: {type(value).__name__} values are not accepted; "
        "write a string, a number, a boolean or nothing (e.g. EXTRA_ARGS: \"--jinja -fa on\")"
    )


def normalize_preset(data: Mapping) -> dict[str, str]:
    """YAML dict -> preset map: keys upper-cased, values as Loki text.

    Booleans become ``on``/``off``, None becomes ``""``, numbers their decimal
    text; a list or a mapping raises PresetError naming the key.
    """
    if not isinstance(data, Mapping):
        raise PresetError(f"a preset must be a mapping of KEY: value, got {type(data).__name__}")
    preset: dict[str, str] = {}
    for key, value in data.items():
        if not isinstance(key, str) or not key.strip():
            raise PresetError(f"preset key {key!r}: keys must be non-empty strings such as CTX or NGL")
        name = key.strip().upper()
        preset[name] = _scalar_text(name, value)
    return preset
