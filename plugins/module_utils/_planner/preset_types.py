"""A typed reading of every preset key, before any rule reads it.

Loki passes most keys to the engine as written and lets the person in front of
the terminal see the engine fail. A fleet tool restarts services: under systemd
a value the engine refuses is a crash loop, and one it misreads is worse
(``CTX=4k`` is ``-c 4k``, which llama.cpp's ``std::stoi`` reads as 4). So each
key has a type and a range here, written down in docs/planner.md:

* a value outside it is a :class:`PlanError` naming the key, the value and the
  accepted form;
* an unambiguous other spelling is normalised (``32k`` -> ``32768``, ``Q8_0`` ->
  ``q8_0``), with a ``preset.normalised`` note;
* keys for which the spec already says "ignored with a note" (THREADS,
  CACHE_RAM, FIT_TARGET, SPEC, ...) are left to their rule, which keeps that
  behaviour.

The result is the preset every rule reads: canonical text only. Pure.
"""

from __future__ import annotations

import difflib
import ipaddress
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.argv_tokens import C_INT_MAX
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.chat_template import read_chat_template
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.errors import HIDDEN, PlanError
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.flag_table import FlagTable
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.notes import Note
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.typos import nearest

# The keys of spec section 3 (and llamafleet's own), plus those Loki presets carry for other uses (never read at
# launch).
PLANNED_KEYS = (
    "MODEL", "BIN", "CTX", "THREADS", "THREADS_BATCH", "BATCH", "UBATCH", "HOST", "PORT", "PARALLEL", "NGL",
    "KV_TYPE", "KV_TYPE_K", "KV_TYPE_V", "MMPROJ", "REASONING", "REASONING_BUDGET", "REASONING_PRESERVE",
    "API_KEY", "EXTRA_ARGS", "CUDA_VISIBLE_DEVICES", "CUDA_LAUNCH_QUEUES", "CUDA_GRAPH_OPT",
    "OP_OFFLOAD_MIN_BATCH", "FIT_TARGET", "CACHE_RAM", "CACHE_ISOLATE", "SLOT_PERSIST", "SIDE_SLOT",
    "CTX_CHECKPOINTS", "CKPT_MIN_STEP", "SPEC", "MODEL_DRAFT", "SPEC_N_MAX", "SPEC_SAMPLING", "SPLIT_MODE",
    "LOAD_GUARD", "EXTERNAL", "ENGINE",
    # llamafleet's own (docs/planner.md, "Additions to the contract"):
    "METRICS", "CHAT_TEMPLATE",
)  # fmt: skip
OTHER_LOKI_KEYS = (
    "TEMP", "TOP_P", "TOP_K", "MIN_P", "PRESENCE_PENALTY", "REPEAT_PENALTY", "REASONING_ECHO",
    "REASONING_EFFORT", "QUANT", "EXTERNAL_URL", "EXTERNAL_MODEL", "EXTERNAL_KEY", "EXTERNAL_VISION",
    "STRATA_CONFIG", "NAME",
)  # fmt: skip
KNOWN_KEYS = frozenset(PLANNED_KEYS + OTHER_LOKI_KEYS)

# The cache types of llama.cpp's -ctk/-ctv ("allowed values" in its help), for an engine whose help is unknown.
SPEC_KV_TYPES = ("f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "iq4_nl", "q5_0", "q5_1")
# Loki's words for on and off in its own keys (SIDE_SLOT, SLOT_PERSIST, LOAD_GUARD, CACHE_ISOLATE), any case.
LOKI_ON = ("on", "1", "true", "yes", "oui")
LOKI_OFF = ("off", "0", "false", "no", "non")
# REASONING: spec section 10's off words, and the on words both Loki and llama.cpp use.
REASONING_OFF = ("off", "none", "false", "0", "no", "disable", "disabled")
REASONING_ON = ("on", "1", "true", "yes", "oui", "enabled", "enable")

# ASCII digits only: Python's \d also matches other scripts' digits, which std::stoi does not read.
_COUNT = re.compile(r"^\+?([0-9]+)([kKmM]?)\Z")
_SIGNED = re.compile(r"^([+-]?)([0-9]+)\Z")
_GPU_INDEX = re.compile(r"^[0-9]{1,4}\Z")
# CUDA also takes a unique prefix of a UUID.
_GPU_UUID = re.compile(r"^(?:GPU-[0-9A-Fa-f][0-9A-Fa-f-]*|MIG-[0-9A-Za-z][0-9A-Za-z/-]*)\Z")
_HOST_LABEL = re.compile(r"^(?!-)[A-Za-z0-9-]{1,63}(?<!-)\Z")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_SUFFIX = {"": 1, "k": 1024, "m": 1024 * 1024}
TYPO_CUTOFF = 0.8
# Keys read as on/off: a change of case alone is not worth a note.
_SWITCHES = ("SIDE_SLOT", "SLOT_PERSIST", "CACHE_ISOLATE", "LOAD_GUARD", "METRICS")


@dataclass
class TypedPreset:
    """The preset as the rules read it (canonical text), and the notes of its reading."""

    values: dict[str, str]
    notes: list[Note] = field(default_factory=list)


def _refuse(key: str, value: str, accepted: str) -> PlanError:
    return PlanError(f"{key}={value!r} is not valid; accepted: {accepted}", key=key, value=value)


def _normalised(key: str, written: str, read: str) -> Note:
    return Note("preset.normalised", f"{key}={written} read as {read}", code=key)


def _count(key: str, text: str, minimum: int, what: str, suffixes: bool = True) -> str:
    """A token count: decimal, with ``k`` (x1024) or ``m`` (x1048576) when ``suffixes``; canonical decimal."""
    match = _COUNT.match(text)
    suffix = match.group(2).lower() if match else ""
    accepted = f"{what}: an integer from {minimum} to {C_INT_MAX}"
    if suffixes:
        accepted += ", or with k or m (32k = 32768)"
    if not match or (suffix and not suffixes):
        raise _refuse(key, text, accepted)
    number = int(match.group(1)) * _SUFFIX[suffix]
    if not minimum <= number <= C_INT_MAX:
        raise _refuse(key, text, accepted)
    return str(number)


def _signed(key: str, text: str, minimum: int, maximum: int, accepted: str) -> str:
    match = _SIGNED.match(text)
    if not match:
        raise _refuse(key, text, accepted)
    number = int(text)
    if not minimum <= number <= maximum:
        raise _refuse(key, text, accepted)
    return str(number)


def read_ctx(text: str) -> str:
    return _count("CTX", text, 0, "tokens of context (0 = the model's own)")


def read_batch(key: str, text: str) -> str:
    return _count(key, text, 1, "tokens per batch")


def read_port(key: str, text: str) -> str:
    return _signed(key, text, 1, 65535, "a TCP port from 1 to 65535")


def host_takes_list(table: FlagTable) -> bool:
    """The engine listens on a comma-separated list of addresses (its --host help says so)."""
    spec = table.lookup("--host")
    return spec is not None and "comma-separated" in spec.description


def _host_item(key: str, whole: str, item: str) -> str:
    accepted = (
        "an IPv4 or IPv6 address, a host name, a comma-separated list of them (engines that take one), "
        "or an absolute UNIX socket path ending in .sock; no spaces"
    )
    if item.endswith(".sock"):
        if not item.startswith("/"):
            raise _refuse(key, whole, accepted)
        return item
    bare = item[1:-1] if item.startswith("[") and item.endswith("]") else item
    try:
        return str(ipaddress.ip_address(bare)) if ":" in bare else str(ipaddress.IPv4Address(bare))
    except ValueError:
        pass
    labels = bare.rstrip(".").split(".")
    named = len(bare) <= 253 and all(_HOST_LABEL.match(label) for label in labels)
    # All-digit labels are an address gone wrong (10.0.0.300, 010.0.0.1), not a name.
    if named and not all(label.isdigit() for label in labels):
        return bare
    raise _refuse(key, whole, accepted)


def read_host(key: str, text: str, table: FlagTable) -> str:
    """One address, host name or socket path; a comma list where the engine takes one."""
    if not text or any(ch.isspace() for ch in text) or _CONTROL.search(text):
        raise _refuse(key, text, "an address, host name or .sock path, without spaces")
    items = text.split(",")
    if len(items) > 1 and table and not host_takes_list(table):
        raise _refuse(key, text, "one address: this engine's --host takes a single address, not a list")
    if any(not item for item in items):
        raise _refuse(key, text, "a comma-separated list without empty items")
    return ",".join(_host_item(key, text, item) for item in items)


def parallel_auto_value(table: FlagTable) -> str:
    """What this engine reads as "choose the slot count yourself", "" when it has no such value."""
    spec = table.lookup("--parallel")
    return "-1" if spec is not None and "-1 = auto" in spec.description else ""


def read_parallel(text: str, table: FlagTable) -> tuple[str, Note | None]:
    accepted = f"a slot count from 1 to {C_INT_MAX}, or auto"
    auto = parallel_auto_value(table)
    if text.lower() == "auto" or text == "-1":
        if auto:
            return auto, Note(
                "preset.parallel_auto", f"PARALLEL={text} → --parallel {auto} (this engine's automatic slot count)"
            )
        if text == "-1" and table:
            raise _refuse("PARALLEL", text, accepted + "; this engine has no automatic slot count (-1)")
        return "1", Note(
            "preset.parallel_auto",
            f"PARALLEL={text}: this engine has no automatic slot count → --parallel 1 (its default)",
        )
    return _count("PARALLEL", text, 1, "slots", suffixes=False), None


def read_ngl(text: str) -> str:
    word = text.lower()
    if word in ("auto", "all"):
        return word
    return _count("NGL", text, 0, "auto, all, or a number of layers", suffixes=False)


def kv_types(table: FlagTable) -> tuple[str, ...]:
    spec = table.lookup("-ctk") or table.lookup("--cache-type-k")
    return spec.choices if spec is not None and spec.choices else SPEC_KV_TYPES


def read_kv_type(key: str, text: str, table: FlagTable) -> str:
    allowed = kv_types(table)
    if text in allowed:
        return text
    if text.lower() in allowed:
        return text.lower()
    raise _refuse(key, text, f"one of {', '.join(allowed)} (the engine's cache types)")


def read_reasoning(text: str, table: FlagTable) -> str:
    word = text.lower()
    if word in REASONING_OFF:
        return text
    if word in REASONING_ON:
        return "on"
    if word == "auto":
        return "auto"
    spec = table.lookup("--reasoning")
    if spec is not None and text in spec.choices:
        return text
    raise _refuse(
        "REASONING",
        text,
        f"on ({', '.join(REASONING_ON[1:])}), off ({', '.join(REASONING_OFF[1:])}) or auto",
    )


def read_reasoning_budget(text: str) -> str:
    return _signed("REASONING_BUDGET", text, -1, C_INT_MAX, f"-1 (no limit), 0, or a token count up to {C_INT_MAX}")


def read_gpu_selection(text: str) -> tuple[str, Note | None]:
    """CUDA_VISIBLE_DEVICES: GPU indices or UUIDs, comma-separated; ``all`` = every GPU; ``-1`` = none."""
    accepted = "GPU indices (0,1), GPU-/MIG- UUIDs, comma-separated without spaces; all (every GPU) or -1 (none)"
    if text.lower() == "all":
        return "", Note("preset.normalised", f"CUDA_VISIBLE_DEVICES={text}: every GPU (the variable is not set)",
                        code="CUDA_VISIBLE_DEVICES")
    if text == "-1":
        return text, None
    items = text.split(",")
    if not all(_GPU_INDEX.match(i) or _GPU_UUID.match(i) for i in items):
        raise _refuse("CUDA_VISIBLE_DEVICES", text, accepted)
    return text, None


def read_switch(key: str, text: str, default_on: bool) -> str:
    """Loki's on/off keys; canonical ``on``/``off`` (``""`` stays, it is the default)."""
    word = text.lower()
    if word in LOKI_ON:
        return "on"
    if word in LOKI_OFF:
        return "off"
    state = "on" if default_on else "off"
    raise _refuse(key, text, f"on ({', '.join(LOKI_ON)}) or off ({', '.join(LOKI_OFF)}); empty = {state}")


def read_external(text: str) -> str:
    """``1``: a remote API, nothing to deploy (Loki's only external value). Every off word is a local engine, as
    Loki reads anything but 1; so a YAML ``EXTERNAL: false`` (``off`` once normalised) plans locally. An on word
    other than 1 is refused rather than guessed: Loki would run a local engine for it."""
    if text == "1":
        return text
    if text.lower() in LOKI_OFF:
        return "0"
    raise _refuse("EXTERNAL", text, "1 (the preset targets a remote API, nothing to deploy), or empty, 0 or an off "
                  "word (off, false, no, non) for a local engine")


def api_key_problem(key: str) -> str:
    """Why an API key cannot be used as it is ("" when it can). Never quotes the key."""
    if not key.strip():
        return "it is empty"
    if any(ch.isspace() for ch in key.strip()) or _CONTROL.search(key):
        return "it contains a space, a line break or a control character"
    if key.strip().startswith("#"):
        return "it starts with # (llama-server reads such a line of its key file as a comment)"
    if "," in key:
        return "it contains a comma (llama-server splits its key list on commas)"
    return ""


def check_api_key(value: str) -> None:
    problem = api_key_problem(value)
    if problem:
        raise PlanError(f"API_KEY is not valid: {problem}; the key is not shown", key="API_KEY", value=HIDDEN)


def unknown_key_problem(key: str) -> str:
    """A did-you-mean for a key that is no Loki key but close to one ("" when nothing is close).

    Close: typos.nearest, or what difflib calls alike (at TYPO_CUTOFF).
    """
    if key.upper() in KNOWN_KEYS:
        return f"keys are upper case: {key.upper()}"
    name = key.upper()
    near = nearest(name, KNOWN_KEYS)
    if near:
        return " or ".join(near)
    alike = difflib.get_close_matches(name, sorted(KNOWN_KEYS), n=1, cutoff=TYPO_CUTOFF)
    return alike[0] if alike else ""


def _by_key(table: FlagTable) -> dict[str, Callable[[str], str]]:
    return {
        "CTX": read_ctx,
        "BATCH": lambda v: read_batch("BATCH", v),
        "UBATCH": lambda v: read_batch("UBATCH", v),
        "HOST": lambda v: read_host("HOST", v, table),
        "PORT": lambda v: read_port("PORT", v),
        "NGL": read_ngl,
        "KV_TYPE": lambda v: read_kv_type("KV_TYPE", v, table),
        "KV_TYPE_K": lambda v: read_kv_type("KV_TYPE_K", v, table),
        "KV_TYPE_V": lambda v: read_kv_type("KV_TYPE_V", v, table),
        "REASONING": lambda v: read_reasoning(v, table),
        "REASONING_BUDGET": read_reasoning_budget,
        "SIDE_SLOT": lambda v: read_switch("SIDE_SLOT", v, False),
        "SLOT_PERSIST": lambda v: read_switch("SLOT_PERSIST", v, False),
        "CACHE_ISOLATE": lambda v: read_switch("CACHE_ISOLATE", v, True),
        "LOAD_GUARD": lambda v: read_switch("LOAD_GUARD", v, True),
        "METRICS": lambda v: read_switch("METRICS", v, False),
        "EXTERNAL": read_external,
        # Checked here with the others; its rule (chat_template.py) makes the flags.
        "CHAT_TEMPLATE": lambda v: read_chat_template(v, table) and v,
    }


def read_preset(preset: Mapping[str, str], table: FlagTable) -> TypedPreset:
    """Type every key of ``preset`` against this engine's flag table (empty = unknown engine)."""
    values = {str(k): str(v) for k, v in preset.items()}
    notes = _unknown_key_notes(values)
    readers = _by_key(table)
    for key in PLANNED_KEYS:
        raw = values.get(key)
        if raw is None:
            continue
        text = raw.strip()
        if key == "API_KEY":
            if text:
                check_api_key(raw)
        elif not text:
            if key in readers or key in ("PARALLEL", "CUDA_VISIBLE_DEVICES"):
                values[key] = ""  # blanks alone are no value: the default applies, not "-c ' '"
        elif key in readers or key in ("PARALLEL", "CUDA_VISIBLE_DEVICES"):
            values[key], note = _typed_value(key, text, readers, table)
            if note:
                notes.append(note)
        # Any other key is left to its rule, as written.
    return TypedPreset(values=values, notes=notes)


def _unknown_key_notes(values: Mapping[str, str]) -> list[Note]:
    """A key Loki does not know: a near typo of one it knows is refused, naming it; any other is noted."""
    notes = []
    for key in sorted(values):
        if key in KNOWN_KEYS:
            continue
        near = unknown_key_problem(key)
        if near:
            raise PlanError(f"preset key {key} is not a Loki key; did you mean {near}?", key=key, value=values[key])
        notes.append(Note("preset.unknown_key", f"preset key {key} is not a Loki key: ignored", code=key))
    return notes


def _typed_value(key: str, text: str, readers: Mapping, table: FlagTable) -> tuple[str, Note | None]:
    """One key's value as the engine will read it, and the note of its normalisation (None when unchanged)."""
    if key == "PARALLEL":
        return read_parallel(text, table)
    if key == "CUDA_VISIBLE_DEVICES":
        return read_gpu_selection(text)
    read = readers[key](text)
    if read != text and not (key in _SWITCHES and read == text.lower()):
        return read, _normalised(key, text, read)
    return read, None
