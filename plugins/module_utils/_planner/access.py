"""Who may reach the planned server, and whether there is a local server at all: the EXTERNAL switch,
the API key in effect, the --host the engine gets, and the /slots safety rule."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.argv_tokens import (
    flag_value,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.facts import HostFacts
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.listen import (
    DEFAULT_HOST,
    DEFAULT_PORT,
    loopback_only,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.preset_text import split_args


def is_external(preset: Mapping[str, str]) -> bool:
    """EXTERNAL=1: the preset targets a remote API, no local engine."""
    return preset.get("EXTERNAL", "").strip() == "1"


def api_key_in_effect(preset: Mapping[str, str], facts: HostFacts) -> bool:
    """A key protects the server: the engine's key file, or the preset's API_KEY."""
    return bool(facts.api_key_file) or bool(preset.get("API_KEY", "").strip())


def effective_host(preset: Mapping[str, str], extra: Sequence[str]) -> str:
    """The --host value the engine gets: EXTRA_ARGS' last, else HOST, else Loki's default."""
    return flag_value(extra, "--host") or preset.get("HOST", "") or DEFAULT_HOST


def effective_port(preset: Mapping) -> int | None:
    """The port the engine will listen on, as a number: EXTRA_ARGS' last --port, else PORT, else Loki's default;
    None when that is not a number (the planner refuses it then, naming it)."""
    text = flag_value(split_args(str(preset.get("EXTRA_ARGS") or "")), "--port") or str(preset.get("PORT") or "")
    text = text.strip() or DEFAULT_PORT
    # As the planner reads PORT and the engine's std::stoi a --port: a "+" sign and leading zeros change nothing.
    digits = text[1:] if text.startswith("+") else text
    return int(digits) if digits.isascii() and digits.isdigit() else None


def slot_save_safe(preset: Mapping[str, str], extra: Sequence[str], facts: HostFacts) -> bool:
    """/slots actions are only for a server others cannot reach without a key."""
    return loopback_only(effective_host(preset, extra)) or api_key_in_effect(preset, facts)
