"""Public façade of the pure planner: preset + HostFacts -> Plan.

The contract (names and fields) is documented in docs/architecture.md ("The planner contract") and must
stay stable. Everything here is pure: no file, process or environment access;
the probes fill HostFacts beforehand.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._inputs.secrets import (
    SECRET_FLAGS,
    secret_flags_in,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner import (
    capabilities,
    chat_template,
    checkpoints,
    cuda_knobs,
    extra_args,
    fidelity,
    fit_target,
    flash_attn,
    launch_queues,
    load_guard,
    load_mode,
    memory_estimate,
    metrics,
    moe,
    prompt_cache,
    reasoning,
    side_slot,
    speculative,
    tensor_split,
    threads,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.access import api_key_in_effect
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.argv_tokens import arg_value, has_any_flag
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.context_size import (
    DEFAULT_CTX,
    DEFAULT_UBATCH,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.errors import PlanError
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.expectations import (
    MODEL_FLAGS,
    Expectations,
    expectations,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.facts import (
    CpuBudget,
    GGUFInfo,
    HostFacts,
    SplitDev,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.flag_table import (
    FlagTable,
    check_engine_environment,
    check_extra_args,
    read_flag_table,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.host_view import gpu_selection_env
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.listen import (
    DEFAULT_HOST,
    DEFAULT_PORT,
    health_target,
    listen_addresses,
    loopback_only,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.notes import Note
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.placement import (
    NGL_FLAGS,
    effective_kv_types,
    ngl_args,
    ngl_forced,
    preset_kv_types,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.preset_text import (
    PresetError,
    normalize_preset,
    parse_env,
    split_args,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.preset_types import (
    read_external,
    read_host,
    read_port,
    read_preset,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.slot_persist import (
    slot_persist_note,
    slot_persist_plan,
)

__all__ = [
    "CpuBudget",
    "Decisions",
    "GGUFInfo",
    "HostFacts",
    "Note",
    "Plan",
    "PlanError",
    "PresetError",
    "SplitDev",
    "normalize_preset",
    "parse_env",
    "plan",
    "split_args",
]

DEFAULTS = {
    "CTX": DEFAULT_CTX,
    "BATCH": "2048",
    "UBATCH": str(DEFAULT_UBATCH),
    "HOST": DEFAULT_HOST,
    "PORT": DEFAULT_PORT,
    "PARALLEL": "1",
}

# ENGINE values that mean llama.cpp's llama-server (Loki's default engine).
_LLAMA_CPP_ENGINES = ("", "llama.cpp", "llamacpp", "llama-cpp", "llama-server")


# Argv positions whose value is a path that exists only in the running service (its credential, the slot
# directory its unit creates): the engine's preflight gives it a stand-in there (probe_engine.preflight).
SWAP_KEY_FILE = "api_key_file"
SWAP_SLOT_DIR = "slot_dir"


@dataclass(frozen=True)
class Decisions:
    """What the plan decided that the service around the engine must follow; read, never re-derived.

    ``host``/``port``: the values the engine listens with (the last --host/--port of argv: EXTRA_ARGS may
    set them); ``listen``: the addresses of ``host``; ``loopback_only``: every one is loopback or a UNIX
    socket; ``health_url``/``health_unix_socket``: where the host itself asks /health. ``slot_dir``: the
    --slot-save-path the plan wrote (the service creates and empties it), ``slot_persist``: SLOT_PERSIST
    was accepted, so persist-* files survive that emptying. ``api_key_file``: the --api-key-file the plan
    wrote. ``metrics``: the engine serves /metrics (--metrics in argv, or its variable in the service
    environment). ``preflight_swaps``: (argv index, what) of values that exist only under the service.
    ``expect``: what the running engine must report in /props (context, slots, model), from the final argv.
    """

    host: str = ""
    port: str = ""
    listen: tuple[str, ...] = ()
    loopback_only: bool = False
    health_url: str = ""
    health_unix_socket: str = ""
    slot_dir: str = ""
    slot_persist: bool = False
    api_key_file: str = ""
    metrics: bool = False
    preflight_swaps: tuple[tuple[int, str], ...] = ()
    expect: Expectations = field(default_factory=Expectations)

    def as_dict(self) -> dict:
        return {
            "host": self.host,
            "port": self.port,
            "listen": list(self.listen),
            "loopback_only": self.loopback_only,
            "health_url": self.health_url,
            "health_unix_socket": self.health_unix_socket,
            "slot_dir": self.slot_dir,
            "slot_persist": self.slot_persist,
            "api_key_file": self.api_key_file,
            "metrics": self.metrics,
            "preflight_swaps": [list(swap) for swap in self.preflight_swaps],
            "expect": self.expect.as_dict(),
        }


@dataclass
class Plan:
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    notes: list[Note] = field(default_factory=list)
    warnings: list[Note] = field(default_factory=list)
    refusal: Note | None = None
    # Added beyond the planner contract, docs/architecture.md (additions only):
    external: bool = False  # EXTERNAL=1: nothing to deploy on this host
    api_key_via_env: bool = False  # the role must pass LLAMA_API_KEY (no --api-key-file)
    decisions: Decisions = field(default_factory=Decisions)
    # What the launch needs per device (the placement's input, docs/placement.md); unknown for an external preset.
    memory: memory_estimate.MemoryEstimate = field(default_factory=memory_estimate.MemoryEstimate)


def _get(preset: Mapping[str, str], key: str) -> str:
    """Preset value when present and non-empty, else Loki's default, verbatim."""
    return preset.get(key, "") or DEFAULTS[key]


def normalize_extra(tokens: list[str], help_text: str) -> tuple[list[str], list[Note]]:
    """EXTRA_ARGS as the engine will get them: load flags in its generation's form (spec 6),
    ``--flag=value`` written as two words. The rules read these tokens; they end argv."""
    # Known engines only: with no help text the spec's forms are kept. A help text
    # that lacks a flag proves the engine would exit on it; an empty one proves nothing.
    extra, load_note = load_mode.normalize_load_flags(
        tokens,
        capabilities.supports_load_mode(help_text),
        capabilities.supports_mmap_switch(help_text) or not help_text,
    )
    extra, equals_note = extra_args.split_equals_forms(extra, help_text)
    return extra, [n for n in (load_note, equals_note) if n]


def plan(preset: Mapping[str, str], facts: HostFacts) -> Plan:
    """Plan one llama-server launch (spec sections 1.3, 1.4, 1.5).

    Every key is typed first (preset_types) and EXTRA_ARGS read against the engine's own flag table
    (flag_table): a value the engine would refuse or misread is a PlanError naming it. Then each step adds its
    part of argv (in the spec's order, the user's EXTRA_ARGS last), of the environment and of the notes.
    """
    preset = {str(k): str(v) for k, v in preset.items()}
    external = preset.get("EXTERNAL", "").strip()
    if external and read_external(external) == "1":
        return Plan(
            argv=[],
            notes=[Note("external", "EXTERNAL=1: this preset targets a remote API, no local engine to deploy")],
            external=True,
        )
    draft = _typed_draft(preset, facts)
    _environment(draft)
    _launch_args(draft)
    _placement_args(draft)
    _chat_args(draft)
    _reasoning_args(draft)
    _key_args(draft)
    _endpoint_args(draft)
    _cache_args(draft)
    _decoding_args(draft)
    _closing_notes(draft)
    warnings, refusal = _warnings(draft)
    expect = expectations(draft.argv, facts.gguf, engine_fits_itself=capabilities.fits_layers_itself(draft.help_text))
    k_type, v_type = effective_kv_types(draft.preset, draft.extra, facts.arg_env)[:2]
    return Plan(
        argv=draft.argv,
        env=draft.env,
        notes=draft.notes,
        warnings=warnings,
        refusal=refusal,
        api_key_via_env=draft.api_key_via_env,
        memory=memory_estimate.for_plan(draft.argv, facts, ctx=expect.ctx, slots=expect.slots, k_type=k_type,
                                        v_type=v_type, cards=facts.gpus if expect.ngl not in ("0",) else 0),
        decisions=_decisions(
            draft.argv,
            draft.extra,
            draft.table,
            slot_dir=draft.slot_dir,
            slot_persist=draft.slot_persist,
            api_key_file=draft.key_file,
            serves_metrics=metrics.metrics_served(draft.argv, draft.facts.arg_env),
            swaps=tuple(draft.swaps),
            expect=expect,
        ),
    )


@dataclass
class _Draft:
    """A plan while its steps build it: the typed inputs, then argv, environment and notes in their order."""

    preset: dict[str, str]
    facts: HostFacts
    table: FlagTable
    raw_extra: list[str]  # EXTRA_ARGS as written (the slow-KV warning reads them so)
    extra: list[str]  # EXTRA_ARGS as the engine will get them; they end argv
    argv: list[str]
    notes: list[Note]
    env: dict[str, str] = field(default_factory=dict)
    split: tensor_split.SplitPlan = field(default_factory=tensor_split.SplitPlan)
    # EXTRA_ARGS as the placement rules read them: an accepted tensor split counts as a hand-written -sm tensor.
    place: list[str] = field(default_factory=list)
    swaps: list[tuple[int, str]] = field(default_factory=list)
    key_file: str = ""
    api_key_via_env: bool = False
    slot_dir: str = ""
    slot_persist: bool = False
    # Notes computed with an argv flag but told after the KV fidelity note (spec 1.5 order).
    flash_notes: list[Note] = field(default_factory=list)

    @property
    def help_text(self) -> str:
        return self.facts.help


def _typed_draft(preset: dict[str, str], facts: HostFacts) -> _Draft:
    """The engine, binary and model checks, every key typed, EXTRA_ARGS read against the engine's flag table."""
    notes: list[Note] = []
    engine = preset.get("ENGINE", "").strip()
    if engine.lower() == "strata":
        raise PlanError(
            "ENGINE=strata: this collection deploys llama.cpp's llama-server only", key="ENGINE", value=engine
        )
    if engine.lower() not in _LLAMA_CPP_ENGINES:
        notes.append(
            Note("engine.ignored", f"ENGINE={engine} unknown (llama.cpp or strata): planned for llama-server")
        )
    binary = facts.bin or preset.get("BIN", "").strip()
    if not binary:
        raise PlanError("BIN not defined: set the llama-server binary path (preset BIN or the bin option)", key="BIN")
    model = facts.model or preset.get("MODEL", "").strip()
    if not model:
        raise PlanError("MODEL not defined: set MODEL to a .gguf file name or absolute path", key="MODEL")

    table = read_flag_table(facts.help)
    typed = read_preset(preset, table)
    notes.extend(typed.notes)
    raw_extra = split_args(typed.values.get("EXTRA_ARGS", ""))
    _refuse_key_flags(raw_extra, table)
    _refuse_model_flags(raw_extra, table)
    extra, extra_notes = normalize_extra(raw_extra, facts.help)
    check_extra_args(extra, table, facts.engine_devices)
    notes.extend(check_engine_environment(facts.arg_env, table, facts.engine_devices))
    notes.extend(extra_notes)
    return _Draft(preset=typed.values, facts=facts, table=table, raw_extra=raw_extra, extra=extra,
                  argv=[binary, "-m", model], notes=notes, place=extra)


def _refuse_key_flags(raw_extra: list[str], table: FlagTable) -> None:
    """A key or token flag in EXTRA_ARGS, in any spelling the engine reads (``--api_key``, ``-hft``) or refuses
    (``--api-key=KEY``, whose error would print the key), known whatever the engine's help says."""
    for flag in secret_flags_in(raw_extra, table):
        if flag == "--api-key-file":
            raise PlanError(
                "EXTRA_ARGS must not carry --api-key-file (in any spelling): the key is managed by the collection "
                "(the api_key option, or API_KEY), which gives the engine its own key file and knows the server is "
                "protected",
                key="EXTRA_ARGS",
                token=flag,
            )
        raise PlanError(
            f"EXTRA_ARGS must not carry {flag} (in any spelling): {SECRET_FLAGS[flag]} would be visible in ps and "
            "in the unit file; give the API key through the api_key option (or API_KEY), which reaches the engine "
            "by file",
            key="EXTRA_ARGS",
            token=flag,
        )


def _refuse_model_flags(raw_extra: list[str], table: FlagTable) -> None:
    """-m/--model in EXTRA_ARGS (any spelling: ``--model=``, ``--model_``..., the engine's other names) would load
    a file none of MODEL's checks saw (a .gguf file, in the allowed directories, on the host)."""
    for word in raw_extra:
        name = word.split("=", 1)[0] if word.startswith("-") else word
        folded = name.replace("_", "-") if name.startswith("--") else name
        spec = table.lookup(name) if table else None
        if folded in MODEL_FLAGS or (spec is not None and set(spec.names) & set(MODEL_FLAGS)):
            raise PlanError(
                f"EXTRA_ARGS must not carry {name}: the model is the MODEL key, which is checked (a .gguf file in "
                "the allowed model directories, present on the host); give the path as MODEL",
                key="EXTRA_ARGS",
                token=name,
            )


def _environment(draft: _Draft) -> None:
    """The GPU selection, the tensor split's variables and the CUDA knobs (spec 1.4)."""
    preset, facts = draft.preset, draft.facts
    draft.env.update(gpu_selection_env(preset))
    draft.split = tensor_split.split_plan(preset, draft.extra, facts)
    if draft.split.on:
        draft.place = [*draft.extra, "-sm", "tensor"]
    draft.env.update(draft.split.env)
    draft.notes.extend(draft.split.notes)

    queue_value, queue_notes = launch_queues.launch_queues_env(preset, draft.place, facts)
    if queue_value:
        draft.env["CUDA_SCALE_LAUNCH_QUEUES"] = queue_value
    draft.notes.extend(queue_notes)
    graph_value, graph_notes = cuda_knobs.graph_opt_env(preset, draft.place, facts)
    if graph_value:
        draft.env["GGML_CUDA_GRAPH_OPT"] = graph_value
    offload_value, offload_notes = cuda_knobs.op_offload_min_batch_env(preset, facts)
    if offload_value:
        draft.env["GGML_OP_OFFLOAD_MIN_BATCH"] = offload_value
    draft.notes.extend(graph_notes)
    draft.notes.extend(offload_notes)


def _launch_args(draft: _Draft) -> None:
    """Context (or the side slot's), threads, batches, where it listens, and the slots."""
    preset, extra = draft.preset, draft.extra
    thread_flags, thread_notes = threads.thread_args(
        preset.get("THREADS", ""), preset.get("THREADS_BATCH", ""), extra, draft.facts.cpu
    )
    draft.notes.extend(thread_notes)
    side_ctx, side_mib, side_why = side_slot.side_slot_plan(preset, extra, draft.facts)
    ctx_arg = str(2 * side_ctx) if side_ctx > 0 else _get(preset, "CTX")
    draft.argv += ["-c", ctx_arg, *thread_flags]
    draft.argv += ["-b", _get(preset, "BATCH"), "-ub", _get(preset, "UBATCH")]
    draft.argv += ["--host", _get(preset, "HOST"), "--port", _get(preset, "PORT")]
    if side_ctx > 0:
        draft.argv += ["--parallel", "2", "--no-kv-unified"]
    elif not has_any_flag(extra, "--parallel", "-np"):
        draft.argv += ["--parallel", _get(preset, "PARALLEL")]
    side_note = side_slot.side_slot_note(side_ctx, side_mib, side_why, ngl_forced(preset, extra))
    if side_note:
        draft.notes.append(side_note)


def _placement_args(draft: _Draft) -> None:
    """GPU layers (or the tensor split's), --fit, the split's own flags, KV types, flash attention, projector."""
    preset, extra, help_text = draft.preset, draft.extra, draft.help_text
    if draft.split.on:
        draft.argv += draft.split.ngl_args
    elif not has_any_flag(extra, *NGL_FLAGS):
        layer_flags, ngl_note = ngl_args(
            preset.get("NGL", ""),
            capabilities.fits_layers_itself(help_text),
            capabilities.supports_ngl_all(help_text) or not help_text,
        )
        if ngl_note:
            draft.notes.append(ngl_note)
        draft.argv += layer_flags

    fit_flags, fit_notes = fit_target.fit_target_args(preset, draft.place, draft.facts)
    draft.argv += fit_flags
    draft.argv += draft.split.args
    draft.notes.extend(fit_notes)

    k_type, v_type = preset_kv_types(preset)
    if k_type:
        draft.argv += ["-ctk", k_type]
    if v_type:
        draft.argv += ["-ctv", v_type]
    fa_flags, draft.flash_notes = flash_attn.v_cache_flash_attn_args(preset, extra, draft.facts)
    draft.argv += fa_flags
    if draft.facts.mmproj:
        draft.argv += ["--mmproj", draft.facts.mmproj]


def _chat_args(draft: _Draft) -> None:
    """CHAT_TEMPLATE, or a note for a chat model whose GGUF has no template (the engine's silent ChatML)."""
    flags, notes = chat_template.chat_template_args(draft.preset, draft.extra, draft.facts.arg_env, draft.table,
                                                    draft.facts.gguf)
    draft.argv += flags
    draft.notes.extend(notes)


def _reasoning_args(draft: _Draft) -> None:
    reasoning_flags, reasoning_notes = reasoning.reasoning_args(draft.preset, draft.facts)
    draft.argv += reasoning_flags
    draft.notes.extend(reasoning_notes)
    preserve_flags, preserve_notes = reasoning.reasoning_preserve_args(draft.preset, draft.extra, draft.facts)
    draft.argv += preserve_flags
    draft.notes.extend(preserve_notes)


def _key_args(draft: _Draft) -> None:
    """The key by file, never --api-key: argv is world-readable through /proc and ps."""
    if not api_key_in_effect(draft.preset, draft.facts):
        return
    if draft.facts.api_key_file and capabilities.supports_api_key_file(draft.help_text):
        draft.key_file = draft.facts.api_key_file
        draft.swaps.append((len(draft.argv) + 1, SWAP_KEY_FILE))
        draft.argv += ["--api-key-file", draft.key_file]
        return
    draft.api_key_via_env = True
    draft.notes.append(
        Note(
            "apikey.env",
            "API key passed as LLAMA_API_KEY from a root-only environment file "
            "(this engine has no --api-key-file, or no key file was given); never on the command line",
        )
    )


def _endpoint_args(draft: _Draft) -> None:
    """The endpoints the engine serves beyond the API: /metrics (METRICS)."""
    metrics_flags, metrics_notes = metrics.metrics_args(draft.preset, draft.extra, draft.facts.arg_env, draft.table)
    draft.argv += metrics_flags
    draft.notes.extend(metrics_notes)


def _cache_args(draft: _Draft) -> None:
    """The prompt cache in RAM, the slot directory (a stand-in in the preflight) and SLOT_PERSIST."""
    preset, extra, facts = draft.preset, draft.extra, draft.facts
    cache_flags, cache_notes = prompt_cache.cache_ram_args(preset, extra, facts)
    draft.argv += cache_flags
    slot_flags = prompt_cache.slot_save_args(preset, extra, facts)
    if slot_flags:
        draft.swaps.append((len(draft.argv) + 1, SWAP_SLOT_DIR))
        draft.slot_dir = slot_flags[1]
    draft.argv += slot_flags
    draft.notes.extend(cache_notes)
    slot_persist, persist_why = slot_persist_plan(preset, extra, facts)
    draft.slot_persist = slot_persist
    persist_note = slot_persist_note(slot_persist, persist_why)
    if persist_note:
        draft.notes.append(persist_note)


def _decoding_args(draft: _Draft) -> None:
    """Checkpoints and speculative decoding; then the user's EXTRA_ARGS, last, so they always win."""
    ckpt_flags, ckpt_notes = checkpoints.ckpt_args(draft.preset, draft.extra, draft.facts)
    draft.argv += ckpt_flags
    draft.notes.extend(ckpt_notes)
    spec_flags, spec_notes = speculative.spec_args(draft.preset, draft.extra, draft.facts)[:2]
    draft.argv += spec_flags
    draft.notes.extend(spec_notes)
    draft.argv += draft.extra


def _closing_notes(draft: _Draft) -> None:
    """What the whole command line says about KV fidelity, lossy caches and MoE placement."""
    preset, extra, facts = draft.preset, draft.extra, draft.facts
    eff_k, eff_v, kv_source = effective_kv_types(preset, extra, facts.arg_env)
    fidelity_note = fidelity.kv_fidelity_note(eff_k, eff_v, kv_source, extra, facts.arg_env)
    if fidelity_note:
        draft.notes.append(fidelity_note)
    draft.notes.extend(draft.flash_notes)
    draft.notes.extend(fidelity.lossy_cache_notes(extra, facts))
    draft.notes.extend(moe.moe_notes(preset, extra, facts))


def _warnings(draft: _Draft) -> tuple[list[Note], Note | None]:
    """The slow-KV warning and the RAM load guard's warning or refusal."""
    warnings: list[Note] = []
    raw_k, raw_v = effective_kv_types(draft.preset, draft.raw_extra, draft.facts.arg_env)[:2]
    slow = fidelity.slow_kv_warning(raw_k, raw_v)
    if slow:
        warnings.append(slow)
    load_warn, refusal = load_guard.load_mode_risk(draft.preset, draft.argv, draft.facts)
    if load_warn:
        # A warning, not a note (the planner contract, docs/architecture.md): the module shows each warning once.
        warnings.append(load_warn)
    return warnings, refusal


def _extra_listen_value(reader, flag: str, value: str) -> str:
    """A --host/--port value of EXTRA_ARGS read like the HOST/PORT key, refused as a word of EXTRA_ARGS."""
    try:
        return reader(value)
    except PlanError as err:
        message = str(err).replace(f"EXTRA_ARGS {flag}={value!r}", f"EXTRA_ARGS: {flag} {value!r}", 1)
        raise PlanError(message, key="EXTRA_ARGS", value=value, token=flag) from None


def _decisions(argv, extra, table, *, slot_dir, slot_persist, api_key_file, serves_metrics, swaps, expect) -> Decisions:
    host = arg_value(argv, "--host")
    port = arg_value(argv, "--port")
    # EXTRA_ARGS speak last; what they set is held to the HOST and PORT rules too.
    if has_any_flag(extra, "--host"):
        host = _extra_listen_value(lambda v: read_host("EXTRA_ARGS --host", v, table), "--host", host)
    if has_any_flag(extra, "--port"):
        port = _extra_listen_value(lambda v: read_port("EXTRA_ARGS --port", v), "--port", port)
    target = health_target(host, port)
    return Decisions(
        host=host,
        port=port,
        listen=tuple(listen_addresses(host)),
        loopback_only=loopback_only(host),
        health_url=target["url"],
        health_unix_socket=target["unix_socket"],
        slot_dir=slot_dir,
        slot_persist=slot_persist and bool(slot_dir),
        api_key_file=api_key_file,
        metrics=serves_metrics,
        preflight_swaps=swaps,
        expect=expect,
    )


def plan_from_env_text(text: str, facts: HostFacts) -> Plan:
    """Convenience for Loki drop-in presets: config.env text -> Plan."""
    return plan(parse_env(text), facts)


def plan_from_mapping(data: Mapping, facts: HostFacts) -> Plan:
    """Convenience for YAML presets: normalise then plan (PresetError on bad types)."""
    return plan(normalize_preset(data), facts)
