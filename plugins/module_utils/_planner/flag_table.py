"""The engine's own flag table, read from ``llama-server --help``, and EXTRA_ARGS checked against it.

llama.cpp prints every option the same way (``common_arg::to_string``): the
spellings separated by ``", "``, then the value placeholder(s), padded to column
40 (a longer head gets a line of its own), then the description, wrapped at
column 40. Switches have no placeholder; a few options take two values. So the
help says, for every flag, every spelling (negations included), how many values
it takes, and often which values it accepts: ``{none,layer,row}``, ``[on|off]``
or an ``allowed values:`` line. Removed flags stay in the table as tombstones
whose description says "the argument has been removed" and names the
replacement: the engine exits on them.

The parser is llama.cpp's: a word it does not know is ``invalid argument`` and
the engine exits; the word after a flag that takes a value is that value,
whatever it looks like; ``std::stoi``/``std::stof`` read the leading digits of a
value and drop the rest (``-c 4k`` is a context of 4). Under systemd each of
these is a crash loop, or a server that runs with a value nobody wrote. So
EXTRA_ARGS is read here word by word, the way the engine will, and refused with
the word named. An unknown engine (no help) gives an empty table and nothing is
guessed: the engine's own parser (the preflight) decides.

Pure: text in, table out.
"""

from __future__ import annotations

import difflib
import functools
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.errors import PlanError
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.notes import Note
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.typos import nearest

# Where llama.cpp starts the description of every option.
_DESCRIPTION_COLUMN = 40
_SECTION = re.compile(r"^-{3,}\s")
_NAME = re.compile(r"^-{1,2}[A-Za-z0-9][A-Za-z0-9_.+-]*\Z")
_SEPARATOR = re.compile(r",\s+")
_ENV = re.compile(r"\(env:\s*([A-Za-z_][A-Za-z0-9_]*)\)")
_ALLOWED = re.compile(r"allowed values:\s*([A-Za-z0-9_.+-]+(?:,\s*[A-Za-z0-9_.+-]+)*)")
_REMOVED = re.compile(r"the argument has been removed\.?\s*(.*)", re.DOTALL)
_QUOTED_WORD = re.compile(r"'([a-z]+)'")
_BRACES = re.compile(r"^\{([A-Za-z0-9_.+-]+(?:,[A-Za-z0-9_.+-]+)+)\}\Z")
_PIPES = re.compile(r"^[\[<]([A-Za-z0-9_.+-]+(?:\|[A-Za-z0-9_.+-]+)+)[\]>]\Z")
_RANGE = re.compile(r"^<-?\d+\.{2,3}-?\d+>\Z")
_NUMBER_LIST_HINT = re.compile(r"^([A-Za-z]+)0,\1(?:1),(?:\1(?:2),)?\.\.\.\Z")
_LIST_SEPARATORS = re.compile(r"[,/]+")
_WORD_LIST = re.compile(r"^[a-z0-9][a-z0-9-]*(?:,[a-z0-9][a-z0-9-]*){2,}\Z")
_NUMBER = re.compile(r"^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?\Z", re.ASCII)
_INTEGER = re.compile(r"^[+-]?\d+\Z", re.ASCII)
# Placeholders whose description lists every value as "- value: what it does" (--load-mode MODE,
# --lazy-mode MODE, --numa TYPE: their handlers take exactly those; checked on the 11434 source).
_BULLETED_PLACEHOLDERS = frozenset({"MODE", "TYPE"})
_BULLET = re.compile(r"(?:^|\s)- ([a-z0-9][a-z0-9+_-]*):")
# Placeholders llama.cpp prints for values it reads with std::stoi / std::stof.
_NUMERIC_PLACEHOLDERS = frozenset({"N", "PORT", "SEED", "INDEX", "SECONDS", "P", "L", "SIMILARITY"})

# llama.cpp's readings of a boolean-like value (common_arg_utils::is_truthy / is_falsey / is_autoy):
# a help that lists [on|off|auto] takes all of these.
TRUTHY = ("on", "enabled", "true", "1")
FALSEY = ("off", "disabled", "false", "0")
AUTOY = ("auto", "-1")

# Flags whose handler reads an int (std::stoi): "1.5" would be read as 1. Long names, as the help prints them.
INTEGER_FLAGS = frozenset(
    {
        "--threads", "--threads-batch", "--ctx-size", "--batch-size", "--ubatch-size", "--parallel", "--port",
        "--n-gpu-layers", "--ctx-checkpoints", "--checkpoint-min-step", "--cache-ram", "--n-cpu-moe",
        "--n-cpu-ffn", "--reasoning-budget", "--spec-draft-n-max", "--spec-draft-n-min", "--fit-ctx", "--keep",
        "--n-predict", "--threads-http", "--timeout", "--cache-reuse", "--kv-unified-per-slot",
        "--spec-ngram-mod-n-min", "--spec-ngram-mod-n-max", "--spec-ngram-mod-n-match", "--fit-target",
    }
)  # fmt: skip

# Flags that make the engine print something and exit instead of serving: under systemd the unit would end
# "inactive (dead)" at once, and with Restart=on-failure nobody would bring it back.
EXITING_FLAGS = frozenset(
    {"-h", "--help", "--usage", "--version", "--list-devices", "--completion-bash", "-cl", "--cache-list"}
)


class ExtraArgsError(PlanError):
    """A word of EXTRA_ARGS the engine would refuse or misread; ``token`` is that word."""

    def __init__(self, message: str, token: str):
        super().__init__(message, key="EXTRA_ARGS", token=token)


@dataclass(frozen=True)
class FlagSpec:
    """One option of the help: its spellings, how many values it takes and which it accepts.

    ``choices``: the accepted values, empty when the help lists none; with ``choice_list`` a value is a
    comma-separated list of them. ``numeric``: the placeholder is a number (``N``, ``<0|1>``), read by
    std::stoi/stof; ``words`` are the non-numeric values its description quotes (``'auto'``, ``'all'``).
    ``numeric_list``: the placeholder is a list of numbers (``N0,N1,N2,...``), split on ``,`` and ``/``.
    ``removed``: the help's text after "the argument has been removed" (what to use instead), "" if live.
    """

    names: tuple[str, ...]
    values: int = 0
    hint: str = ""
    choices: tuple[str, ...] = ()
    choice_list: bool = False
    numeric: bool = False
    numeric_list: bool = False
    words: tuple[str, ...] = ()
    removed: str = ""
    env: str = ""
    description: str = ""

    @property
    def long_name(self) -> str:
        longs = [n for n in self.names if n.startswith("--")]
        return longs[0] if longs else self.names[0]

    @property
    def integer(self) -> bool:
        return self.numeric and any(n in INTEGER_FLAGS for n in self.names)

    @property
    def boolean(self) -> bool:
        """A switch with its negation (``--jinja, --no-jinja``): llama.cpp reads its variable as on/off only."""
        longs = {n for n in self.names if n.startswith("--")}
        return self.values == 0 and any(n.startswith("--no-") and "--" + n[5:] in longs for n in longs)


@dataclass(frozen=True)
class FlagTable:
    """Every flag of one engine's help, by each of its spellings."""

    by_name: dict[str, FlagSpec]
    specs: tuple[FlagSpec, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.by_name)

    def lookup(self, word: str) -> FlagSpec | None:
        """The flag a command-line word names, as llama.cpp finds it (``_`` reads as ``-`` in ``--`` names)."""
        if word.startswith("--"):
            word = word.replace("_", "-")
        return self.by_name.get(word)

    def closest(self, word: str, count: int = 3) -> list[str]:
        """The known spellings nearest to ``word``, best first (for "did you mean")."""
        return difflib.get_close_matches(word.replace("_", "-"), list(self.by_name), n=count, cutoff=0.6)

    def by_env(self, name: str) -> FlagSpec | None:
        """The flag whose ``(env: NAME)`` this is."""
        for spec in self.specs:
            if spec.env == name:
                return spec
        return None

    def accepts(self, flag: str, value: str) -> bool:
        """Whether the listed choices of ``flag`` admit ``value`` (True when it lists none, or is unknown)."""
        spec = self.lookup(flag)
        return spec is None or _choice_problem(spec, value) == ""


def _split_head(line: str) -> tuple[str, str]:
    """(head, start of the description) of an option's first line."""
    head = line[:_DESCRIPTION_COLUMN]
    if len(line) > _DESCRIPTION_COLUMN and head.endswith(" ") and line[_DESCRIPTION_COLUMN] != " ":
        return head.rstrip(), line[_DESCRIPTION_COLUMN:]
    return line.rstrip(), ""


def _hint_words(hint: str) -> list[str]:
    """Top-level words of a placeholder: ``<tensor name pattern>=<buffer type>,...`` is one word."""
    words: list[str] = []
    depth = 0
    current = ""
    for ch in hint:
        if ch in "<[{(":
            depth += 1
        elif ch in ">]})" and depth:
            depth -= 1
        if ch == " " and depth == 0:
            if current:
                words.append(current)
            current = ""
        else:
            current += ch
    if current:
        words.append(current)
    return words


def _parse_head(head: str) -> tuple[list[str], str] | None:
    """(spellings, placeholder text) of an option head; None when it is not one."""
    pieces = _SEPARATOR.split(head.strip())
    names: list[str] = []
    hint = ""
    for index, piece in enumerate(pieces):
        name, _sep, rest = piece.partition(" ")
        if not _NAME.match(name):
            return None
        names.append(name)
        if rest.strip():
            # The placeholder started: whatever follows (commas included) belongs to it.
            hint = " ".join([rest.strip(), *pieces[index + 1:]]) if index + 1 < len(pieces) else rest.strip()
            break
    return names, hint


def _choices(hint: str, description: str) -> tuple[tuple[str, ...], bool, bool]:
    """(choices, comma-separated list of them, numeric placeholder) from a placeholder and description."""
    words = _hint_words(hint)
    first = words[0] if words else ""
    braces = _BRACES.match(first)
    if braces:
        return tuple(braces.group(1).split(",")), False, False
    pipes = _PIPES.match(first)
    if pipes:
        listed = tuple(pipes.group(1).split("|"))
        if all(_INTEGER.match(v) for v in listed):
            return (), False, True  # <0|1>: read with std::stoi, a number
        if set(listed) <= {"on", "off", "auto"}:
            accepted = TRUTHY + FALSEY + (AUTOY if "auto" in listed else ())
            return accepted, False, False
        return listed, False, False
    if _RANGE.match(first):
        return (), False, True
    if _WORD_LIST.match(first):
        return tuple(first.split(",")), True, False
    allowed = _ALLOWED.search(description)
    if allowed:
        return tuple(v.strip() for v in allowed.group(1).split(",")), False, False
    if first in _BULLETED_PLACEHOLDERS:
        bullets = tuple(dict.fromkeys(_BULLET.findall(description)))
        if bullets:
            return bullets, False, False
    return (), False, first in _NUMERIC_PLACEHOLDERS


def _spec(names: list[str], hint: str, description: str) -> FlagSpec:
    choices, choice_list, numeric = _choices(hint, description)
    numeric_list = bool(_NUMBER_LIST_HINT.match(hint))
    removed = _REMOVED.search(description)
    env = _ENV.search(description)
    words = tuple(dict.fromkeys(_QUOTED_WORD.findall(description))) if numeric else ()
    removed_text = ""
    if removed:
        removed_text = " ".join(_ENV.sub("", removed.group(1)).split()) or "no replacement named"
    return FlagSpec(
        names=tuple(names),
        values=len(_hint_words(hint)),
        hint=hint,
        choices=choices,
        choice_list=choice_list,
        numeric=numeric,
        numeric_list=numeric_list,
        words=words,
        removed=removed_text,
        env=env.group(1) if env else "",
        description=description,
    )


@functools.lru_cache(maxsize=8)
def read_flag_table(help_text: str) -> FlagTable:
    """The flag table of a ``--help`` text; empty for an empty (unknown) help."""
    specs: list[FlagSpec] = []
    current: tuple[list[str], str, list[str]] | None = None

    def close() -> None:
        if current is not None:
            names, hint, lines = current
            specs.append(_spec(names, hint, " ".join(" ".join(lines).split())))

    for line in help_text.splitlines():
        if line.startswith("-") and not _SECTION.match(line):
            head, start = _split_head(line)
            parsed = _parse_head(head)
            if parsed is not None:
                close()
                current = (parsed[0], parsed[1], [start] if start else [])
                continue
        if current is not None and line[:1].isspace() and line.strip():
            current[2].append(line.strip())
        elif current is not None and not line.strip():
            continue  # a blank line inside a description (llama.cpp keeps them) or between sections
        else:
            close()
            current = None
    close()
    by_name: dict[str, FlagSpec] = {}
    for spec in specs:
        for name in spec.names:
            by_name.setdefault(name, spec)
    return FlagTable(by_name=by_name, specs=tuple(specs))


# Flags whose value names devices (a comma list, or "none") or buffer types (pattern=buffer,...), by their
# first long spelling in either engine generation.
DEVICE_LIST_FLAGS = frozenset({"--device", "--spec-draft-device", "--device-draft"})
ONE_DEVICE_FLAGS = frozenset({"--mmproj-device"})
OVERRIDE_FLAGS = frozenset({"--override-tensor", "--spec-draft-override-tensor", "--override-tensor-draft"})
# The host's own buffer type, always there whatever the devices.
CPU_BUFFER = "CPU"


def _device_problem(spec: FlagSpec, value: str, devices: Sequence[str] | None) -> str:
    """Why a device or buffer-override value would not parse ("" when it would, or cannot be told)."""
    name = spec.long_name
    listed = f"this engine lists {', '.join(devices) or 'no device'}" if devices is not None else ""
    if name in DEVICE_LIST_FLAGS or name in ONE_DEVICE_FLAGS:
        items = [value] if name in ONE_DEVICE_FLAGS else value.split(",")
        if value == "none":
            return ""
        for item in items:
            if not item or not item.isascii() or not item.replace("_", "a").isalnum():
                return f"{item!r} is not a device name (CUDA0, Vulkan1, ...; or none)"
            if devices is not None and item not in devices:
                return f"{item!r} is no device of this host ({listed})"
        return ""
    if name in OVERRIDE_FLAGS:
        for element in value.split(","):
            _pattern, sep, buffer = element.partition("=")
            if not sep or not buffer:
                return f"{element!r} is not <tensor name pattern>=<buffer type>"
            if devices is not None and buffer != CPU_BUFFER and buffer not in devices:
                return f"buffer type {buffer!r} is not one of this host's ({CPU_BUFFER}; {listed})"
        return ""
    return ""


# Flags whose value llama.cpp parses as JSON (nlohmann::json, strict: no NaN), an object for the first.
JSON_OBJECT_FLAGS = frozenset({"--chat-template-kwargs"})
JSON_FLAGS = frozenset({"--json-schema", "--ui-config", "--mcp-servers-json"})


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is no JSON")


def _json_problem(spec: FlagSpec, value: str) -> str:
    if spec.long_name not in JSON_OBJECT_FLAGS | JSON_FLAGS:
        return ""
    try:
        parsed = json.loads(value, parse_constant=_reject_constant)
    except ValueError as err:
        return f"{value!r} is not valid JSON ({err})"
    if spec.long_name in JSON_OBJECT_FLAGS and not isinstance(parsed, dict):
        return f"{value!r} is not a JSON object ({{\"key\": value, ...}})"
    return ""


def _value_problem(spec: FlagSpec, value: str, devices: Sequence[str] | None = None) -> str:
    """Why ``value`` is not one the flag takes ("" when it is): listed choices, numbers, devices, JSON."""
    return _choice_problem(spec, value) or _device_problem(spec, value, devices) or _json_problem(spec, value)


def _choice_problem(spec: FlagSpec, value: str) -> str:
    """Why ``value`` is not one the flag accepts ("" when it is)."""
    if spec.choices:
        items = value.split(",") if spec.choice_list else [value]
        bad = [item for item in items if item not in spec.choices]
        if bad:
            listed = spec.hint if _BRACES.match(spec.hint) or _PIPES.match(spec.hint) else ", ".join(spec.choices)
            return f"{bad[0]!r} is not one of {listed}"
        return ""
    if spec.numeric_list:
        integer = any(n in INTEGER_FLAGS for n in spec.names)
        pattern = _INTEGER if integer else _NUMBER
        items = _LIST_SEPARATORS.split(value)
        if not all(pattern.match(item) for item in items):
            kind = "integers" if integer else "numbers"
            return f"{value!r} is not a list of {kind} ({spec.hint})"
        return ""
    if spec.numeric and value not in spec.words:
        pattern = _INTEGER if spec.integer else _NUMBER
        if not pattern.match(value.strip()):
            kind = "an integer" if spec.integer else "a number"
            words = f" or {', '.join(spec.words)}" if spec.words else ""
            return f"{value!r} is not {kind}{words} (llama.cpp would read only its leading digits, or exit)"
    return ""


def check_extra_args(tokens: Sequence[str], table: FlagTable, devices: Sequence[str] | None = None) -> list[Note]:
    """Read EXTRA_ARGS word by word as the engine will; raise ExtraArgsError on the first word it would refuse.

    Refused: a word that is no flag of this engine (with the nearest spellings), a removed flag (with the
    replacement the help names), a flag whose value is missing, a value outside the flag's listed choices, a
    number the engine would misread, a flag that makes the engine exit instead of serving. An empty table
    (unknown engine) checks nothing. ``devices``: the engine's own device list, when it was read (device and
    buffer names are then checked against it). Returns notes for accepted words worth a mention (none yet).
    """
    if not table:
        return []
    index = 0
    while index < len(tokens):
        word = tokens[index]
        spec = table.lookup(word)
        if spec is None:
            raise ExtraArgsError(_unknown_message(word, table), word)
        if spec.removed:
            raise ExtraArgsError(
                f"EXTRA_ARGS: {word} has been removed from this engine ({spec.removed}); it would exit on it",
                word,
            )
        if word in EXITING_FLAGS or (word.startswith("--") and word.replace("_", "-") in EXITING_FLAGS):
            raise ExtraArgsError(
                f"EXTRA_ARGS: {word} makes llama-server print and exit instead of serving; remove it", word
            )
        values = list(tokens[index + 1:index + 1 + spec.values])
        missing = len(values) < spec.values or any(
            table.lookup(v) is not None and not _NUMBER.match(v) for v in values
        )
        if missing:
            placeholder = spec.hint or "a value"
            raise ExtraArgsError(f"EXTRA_ARGS: {word} needs its value ({word} {placeholder})", word)
        if spec.values == 1:
            problem = _value_problem(spec, values[0], devices)
            if problem:
                raise ExtraArgsError(f"EXTRA_ARGS: {word} {values[0]}: {problem}", word)
        index += 1 + spec.values
    return []


ENV_PREFIX = "LLAMA_ARG_"
_NEGATED_ENV_PREFIX = "LLAMA_ARG_NO_"


def check_engine_environment(
    arg_env: Mapping[str, str], table: FlagTable, devices: Sequence[str] | None = None
) -> list[Note]:
    """The LLAMA_ARG_* variables of the service, read as the engine will (it applies them before argv).

    A value the engine's handler would refuse or misread is a PlanError naming the variable (llama.cpp
    exits on ``LLAMA_ARG_THREADS=x``: "error while handling environment variable"). A variable this engine
    does not read is ignored by it: refused when it is one edit or so from one it reads (a typo), else noted.
    """
    if not table:
        return []
    notes: list[Note] = []
    suffixes = [spec.env[len(ENV_PREFIX):] for spec in table.specs if spec.env.startswith(ENV_PREFIX)]
    for name in sorted(arg_env):
        if not name.startswith(ENV_PREFIX):
            continue
        value = str(arg_env[name])
        spec = table.by_env(name)
        if spec is None and name.startswith(_NEGATED_ENV_PREFIX):
            positive = table.by_env(ENV_PREFIX + name[len(_NEGATED_ENV_PREFIX):])
            if positive is not None and positive.boolean:
                continue  # llama.cpp's compatibility spelling: present means off, whatever its value
        if spec is None:
            near = nearest(name[len(ENV_PREFIX):], suffixes)
            if near:
                spelled = " or ".join(ENV_PREFIX + n for n in near)
                raise PlanError(
                    f"{name}: this engine reads no such variable; did you mean {spelled}?", key=name, value=value
                )
            notes.append(Note("env.unknown", f"{name}: this engine does not read it (ignored by llama-server)",
                              code=name))
            continue
        if spec.boolean and value not in TRUTHY + FALSEY:
            raise PlanError(
                f"{name}={value!r} (environment) is not valid; accepted: {', '.join(TRUTHY + FALSEY)}",
                key=name, value=value,
            )
        problem = _value_problem(spec, value, devices) if spec.values == 1 else ""
        if problem:
            raise PlanError(f"{name}={value!r} (environment, {spec.long_name}): {problem}", key=name, value=value)
    return notes


def _unknown_message(word: str, table: FlagTable) -> str:
    if not word.startswith("-") or _NUMBER.match(word):
        return f"EXTRA_ARGS: {word!r} is not a flag (a value without its flag, or a value given twice?)"
    near = table.closest(word.partition("=")[0])
    hint = f"; did you mean {' or '.join(near)}?" if near else ""
    return f"EXTRA_ARGS: {word} is not a flag of this engine (llama-server would exit: invalid argument){hint}"
