# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a router instance says of its models (``GET /v1/models``), and whether each runs the plan.

Pure. In router mode ``/v1/models`` lists every model of the models file with a ``status``: ``value`` (``loaded``,
``loading``, ``sleeping``, ``unloaded``), ``args`` (the child's argv, once it is started), ``preset`` (the engine's
own rendering of the section it read) and, for a child that exited in error, ``failed`` and ``exit_code``. So the
judge and the verification read the engine, not the file that was written: a model runs the plan when the section
the engine read carries the planned options, and, once loaded, its child's argv does too.

The engine renders a section in its own words: each option under its last long spelling (``c`` comes back as
``ctx-size``), a negated switch as its positive one set to ``false`` (``no-jinja = true`` comes back as
``jinja = false``), with the options the router sets for every child (``log-colors``) added. Both sides are read
into one form through the engine's flag table before they are compared.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.flag_table import (
    FALSEY,
    TRUTHY,
    FlagSpec,
    FlagTable,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._render.router_presets import (
    ROUTER_OWNED,
    parse_models_file,
)

LOADED = frozenset({"loaded", "sleeping"})
# Options the engine's rendering of a section leaves out, shown elsewhere in the model's entry.
SHOWN_APART = frozenset({"--alias"})


@dataclass(frozen=True)
class RouterModel:
    """One model of a router, as ``/v1/models`` gives it."""

    name: str
    status: str
    args: tuple[str, ...] = ()
    options: Mapping[str, str] | None = None  # the section the engine read; None when it gave none
    aliases: tuple[str, ...] = ()  # the other names the router routes to it (the section's alias option)
    failed: bool = False
    exit_code: int = 0

    @property
    def running(self) -> bool:
        """A child runs for it (serving, or asleep and woken by the next request)."""
        return self.status in LOADED

    @property
    def port(self) -> int:
        """The child's loopback port, 0 while none runs."""
        if "--port" in self.args[:-1]:
            value = self.args[self.args.index("--port") + 1]
            return int(value) if value.isdigit() else 0
        return 0


def read_router_models(answer: Mapping) -> dict[str, RouterModel]:
    """``{name: RouterModel}`` from the JSON of ``GET /v1/models``; ValueError when it is not a router's list."""
    data = answer.get("data") if isinstance(answer, Mapping) else None
    if not isinstance(data, list):
        raise ValueError("not a model list: no 'data' array")
    models = {}
    for entry in data:
        if not isinstance(entry, Mapping) or not isinstance(entry.get("id"), str):
            raise ValueError(f"a model entry without an id: {entry!r:.200}")
        status = entry.get("status")
        if not isinstance(status, Mapping) or not isinstance(status.get("value"), str):
            raise ValueError(f"model {entry['id']}: no status (is this engine a router?)")
        args = status.get("args") or []
        preset = status.get("preset")
        options = parse_models_file(preset).get(entry["id"], {}) if isinstance(preset, str) else None
        models[entry["id"]] = RouterModel(
            name=entry["id"], status=status["value"], args=tuple(str(word) for word in args), options=options,
            failed=bool(status.get("failed")), exit_code=int(status.get("exit_code") or 0),
            aliases=tuple(sorted(str(alias) for alias in entry.get("aliases") or ())))
    return models


def _negative(spec: FlagSpec, spelling: str) -> bool:
    """Whether ``spelling`` is the negation of a switch (``--no-jinja``, ``-nkvo``): the engine prints a switch's
    spellings first, then its negations, and its first long spelling is never a negation."""
    if not spec.boolean:
        return False
    long_positive = next(name for name in spec.names if name.startswith("--") and not name.startswith("--no-"))
    return spec.names.index(spelling) > spec.names.index(long_positive)


def _spec_of(key: str, table: FlagTable) -> tuple[FlagSpec | None, str]:
    """The flag a section's key names and which of its spellings the key is (the engine's keys are spellings without
    their dashes); (None, "") for a key the table does not know."""
    for spelling in ("-" + key, "--" + key) if len(key) == 1 else ("--" + key, "-" + key):
        spec = table.lookup(spelling)
        if spec is not None:
            found = spelling if spelling in spec.names else next(
                (name for name in spec.names if name.lstrip("-") == key), spec.names[0])
            return spec, found
    return None, ""


def _canonical(table: FlagTable, items: Iterable[tuple[str, str]]) -> dict[str, str]:
    """``{flag's first spelling: value}`` with switches as ``true``/``false``; router-owned flags left out;
    an option the table does not know is kept under its own key, so it shows as a difference."""
    out: dict[str, str] = {}
    for key, written in items:
        value = written
        spec, found = _spec_of(key, table)
        if spec is None:
            out["?" + key] = value
            continue
        if any(name in ROUTER_OWNED or name in SHOWN_APART for name in spec.names):
            continue
        if spec.values == 0:
            on = value in TRUTHY or (value not in FALSEY and value != "")
            if _negative(spec, found):
                on = not on
            value = "true" if on else "false"
        out[spec.names[0]] = value
    return out


def _is_alias(key: str, table: FlagTable) -> bool:
    spec = _spec_of(key, table)[0]
    return spec is not None and "--alias" in spec.names


def option_differences(planned: Sequence[tuple[str, str]], read: Mapping[str, str], table: FlagTable) -> list[str]:
    """How the section the engine read differs from the planned options ([] when it carries exactly them)."""
    want, got = _canonical(table, planned), _canonical(table, read.items())
    lines = []
    for flag in sorted(set(want) | set(got)):
        if want.get(flag) != got.get(flag):
            planned_text = want.get(flag, "(not planned)")
            read_text = got.get(flag, "(absent)")
            lines.append(f"{flag.lstrip('?')}: planned {planned_text!r}, the engine read {read_text!r}")
    return lines


def model_differences(model: RouterModel | None, planned: Sequence[tuple[str, str]], table: FlagTable) -> list[str]:
    """Why a router's model does not run its plan ([] when it does): missing, failed, or its options differ."""
    if model is None:
        return ["the router does not list it"]
    if model.options is None:
        return ["the router does not say which options it read"]
    reasons = option_differences(planned, model.options, table)
    aliases = tuple(sorted({alias.strip() for key, value in planned if _is_alias(key, table)
                            for alias in value.split(",") if alias.strip()}))
    if aliases != model.aliases:
        reasons.append(f"aliases: planned {list(aliases)}, the router has {list(model.aliases)}")
    if model.failed:
        reasons.append(f"its last child exited in error ({model.exit_code})")
    return reasons
