"""Speculative decoding: SPEC, MODEL_DRAFT, SPEC_N_MAX, SPEC_SAMPLING (spec section 13).

Speculation never changes what the model writes: every emitted token is
sampled by the target model and a drafted token is kept only when it agrees.
What it costs is elsewhere: 1-2 GB of VRAM, sometimes a slower prefill, and a
young engine feature that can stop the server from starting. Hence the
opt-in, the guards in front of SPEC=auto, and a few notes on what it costs.

Flags this module never writes: ``--spec-default``, ``--draft``,
``--draft-max``, ``--draft-n``, ``-ctkd``, ``-ctvd``, ``--spec-synth-*``.
SPEC=auto never picks probabilistic draft sampling and never picks n-grams.

``spec.skip`` notes carry a reason code in ``Note.code``:

* n-gram guards: ``ngram_unsupported``, ``draft_flags_extra``, ``offload_threshold``;
* draft source: ``draft_not_found``, ``draft_unreadable``, ``mtp_unsupported``,
  ``draft_sidecar``, ``draft_simple_unsupported``, ``model_unreadable``,
  ``no_mtp_head``;
* SPEC=auto guards: ``qwen4exp``, ``manual_placement``, ``device``,
  ``ctx_not_fixed``, ``mmproj``, ``build_unknown``, ``build_old``,
  ``auto_blocked``.

``spec.ngram_fallback`` (SPEC=mtp+ngram without a usable MTP head) carries the
draft-source code, or ``draft_not_mtp`` when MODEL_DRAFT is an ordinary draft model.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.argv_tokens import (
    flag_values,
    has_any_flag,
    has_flag_prefix,
    parse_int,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.capabilities import (
    supports_draft_simple,
    supports_mtp,
    supports_ngram_mod,
    supports_probabilistic,
    supports_spec_n_max,
    supports_spec_sampling,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.context_size import ctx_fixed
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.cuda_knobs import op_offload_threshold
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.facts import HostFacts
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.notes import Note
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.placement import (
    DEVICE_FLAGS,
    cpu_weights,
    fit_blocker,
    ngl_forced,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.switches import (
    SPEC_OFF,
    SPEC_UNREADABLE,
    spec_mode,
    spec_user_set,
)

# ngram-mod bounds, always written out: --spec-default sets the same ones today,
# but an engine update could change them without a word. A draft starts after 24
# tokens repeated verbatim and is 48 to 64 tokens long (what tool loops copy).
NGRAM_N_MATCH = 24
NGRAM_N_MIN = 48
NGRAM_N_MAX = 64
VERIFY_BATCH = NGRAM_N_MAX + 1  # the draft plus the token it is checked against

# First official build where SPEC=auto is trusted; an unknown build (self-built,
# fork) may list the flag without honouring it.
SPEC_AUTO_MIN_BUILD = 11009
SPEC_N_MAX_LIMIT = 64

MODE_AUTO = "auto"
MODE_MTP = "mtp"
MODE_NGRAM = "ngram"
MODE_MTP_NGRAM = "mtp+ngram"

_DRAFT_MTP = "draft-mtp"
_SIDECAR_ARCHS = ("eagle3", "dflash")  # speculation heads, not standalone draft models
_COST_SUFFIX = "~1-2 GB more VRAM"


@dataclass(frozen=True)
class Blocker:
    """Why speculation is not turned on: a stable code and an English reason."""

    code: str
    why: str


@dataclass(frozen=True)
class SpecSource:
    """Where the draft comes from (spec 13.3).

    ``args`` is empty when there is no usable draft; then ``blocker`` says why,
    unless ``quiet`` (SPEC=auto on a model without an MTP head: nothing to say).
    """

    args: tuple[str, ...] = ()
    is_mtp: bool = False
    blocker: Blocker | None = None
    quiet: bool = False


def ngram_bounds() -> list[str]:
    return [
        "--spec-ngram-mod-n-match",
        str(NGRAM_N_MATCH),
        "--spec-ngram-mod-n-min",
        str(NGRAM_N_MIN),
        "--spec-ngram-mod-n-max",
        str(NGRAM_N_MAX),
    ]


def draft_key(preset: Mapping[str, str], facts: HostFacts) -> str:
    """MODEL_DRAFT as the rules read it; a draft that is the main model counts as none."""
    if facts.draft_is_model:
        return ""
    return preset.get("MODEL_DRAFT", "").strip()


def _draft_label(draft: str) -> str:
    # Base name of the resolved draft path, as Go's filepath.Base (trailing "/" ignored).
    return draft.rstrip("/").rsplit("/", 1)[-1]


def _arch_is(facts: HostFacts, arch: str) -> bool:
    return facts.gguf is not None and facts.gguf.arch.lower() == arch


def _block_count(facts: HostFacts) -> int:
    return facts.gguf.block_count if facts.gguf is not None else 0


def ngram_blocker(preset: Mapping[str, str], extra: Sequence[str], facts: HostFacts, mode: str) -> Blocker | None:
    """Why SPEC=ngram / mtp+ngram cannot add n-grams here (spec 13.5), first match."""
    # Engines from before the flag rename still list ngram-mod but refuse today's
    # flags and die at start: the flag itself is the witness.
    if not supports_ngram_mod(facts.help):
        return Blocker("ngram_unsupported", "this engine does not know --spec-ngram-mod-n-match")
    if mode == MODE_NGRAM:
        # n-grams have no draft model: a --spec-draft-* flag means a draft is tuned by hand.
        name = has_flag_prefix(extra, "--spec-draft-", "--spec_draft_")
        if name:
            return Blocker("draft_flags_extra", f"{name} in EXTRA_ARGS (draft tuned by hand)")
    reason = cpu_weights(preset, extra, facts.arg_env, _block_count(facts))
    if reason:
        # From this batch size on, llama.cpp copies RAM-resident weights to the GPU:
        # every verification batch would stream them over PCIe (or from disk).
        threshold = op_offload_threshold(preset, facts)
        if threshold <= VERIFY_BATCH:
            return Blocker(
                "offload_threshold",
                f"{reason}: a verification batch of {VERIFY_BATCH} tokens reaches GGML_OP_OFFLOAD_MIN_BATCH "
                f"({threshold}) and would copy these weights to the GPU on every draft — "
                "OP_OFFLOAD_MIN_BATCH=128 to try it, measure",
            )
    return None


def spec_source(mode: str, key: str, facts: HostFacts) -> SpecSource:
    """The draft for SPEC=auto / mtp / mtp+ngram: MODEL_DRAFT, else the model's MTP head.

    ``key`` is :func:`draft_key`. Like llama.cpp, the tensors decide: a
    nextn_predict_layers key alone does not prove the head is in the file.
    """
    if key:
        return _draft_model_source(mode, key, facts)
    gguf = facts.gguf
    if gguf is None:
        return SpecSource(blocker=Blocker("model_unreadable", "model metadata unreadable"))
    if not gguf.has_nextn_tensor:
        if mode != MODE_AUTO or gguf.nextn > 0:
            return SpecSource(
                blocker=Blocker(
                    "no_mtp_head", "no MTP head in this file (published separately? MODEL_DRAFT=mtp-….gguf)"
                )
            )
        return SpecSource(quiet=True)
    if not supports_mtp(facts.help):
        return SpecSource(blocker=Blocker("mtp_unsupported", "this engine does not know draft-mtp"))
    return SpecSource(args=("--spec-type", _DRAFT_MTP), is_mtp=True)


def _draft_model_source(mode: str, key: str, facts: HostFacts) -> SpecSource:
    """MODEL_DRAFT as the draft: an MTP head, or an ordinary draft model (draft-simple)."""
    if not facts.draft:
        why = f"MODEL_DRAFT={key} not found"
        if facts.draft_err:
            why += f" ({facts.draft_err})"
        return SpecSource(blocker=Blocker("draft_not_found", why))
    draft = facts.draft_gguf
    if draft is None:
        return SpecSource(
            blocker=Blocker("draft_unreadable", "MODEL_DRAFT unreadable (incomplete GGUF or still downloading?)")
        )
    if draft.has_nextn_tensor:
        if not supports_mtp(facts.help):
            return SpecSource(blocker=Blocker("mtp_unsupported", "this engine does not know draft-mtp"))
        # Explicit type: llama.cpp only guesses it from the first shard.
        return SpecSource(args=("-md", facts.draft, "--spec-type", _DRAFT_MTP), is_mtp=True)
    if draft.arch.strip().lower() in _SIDECAR_ARCHS:
        return SpecSource(
            blocker=Blocker(
                "draft_sidecar",
                f"MODEL_DRAFT is a {draft.arch} head, not a draft model: set -md and --spec-type in EXTRA_ARGS",
            )
        )
    if mode == MODE_MTP_NGRAM:
        # An ordinary draft model is not an MTP head: the caller falls back to n-grams.
        return SpecSource()
    if not supports_draft_simple(facts.help):
        return SpecSource(
            blocker=Blocker("draft_simple_unsupported", "this engine does not know --spec-type draft-simple")
        )
    # Without an explicit type a non-MTP draft would be loaded and never used.
    return SpecSource(args=("-md", facts.draft, "--spec-type", "draft-simple"))


def spec_auto_blocker(preset: Mapping[str, str], extra: Sequence[str], facts: HostFacts) -> Blocker | None:
    """Why SPEC=auto stays off (spec 13.4), first match; None = go."""
    if _arch_is(facts, "qwen4exp"):
        return Blocker("qwen4exp", "qwen4exp: MTP too recent for this engine, SPEC=mtp to force it")
    # Only --fit accounts for the draft's VRAM; any manual placement bypasses it.
    why = fit_blocker(preset, extra, facts)
    if why:
        return Blocker("manual_placement", f"manual placement ({why}) — --fit does not count the draft's VRAM")
    if has_any_flag(extra, *DEVICE_FLAGS) or facts.arg_env.get("LLAMA_ARG_DEVICE", ""):
        return Blocker("device", "manual placement (--device) — --fit does not count the draft's VRAM")
    # A context that is not a number may be shrunk by --fit to make room: lost information.
    if not ctx_fixed(preset, extra)[1]:
        return Blocker("ctx_not_fixed", "context not a number — fit could shrink it to make room for the draft")
    if facts.mmproj or has_any_flag(extra, "--mmproj", "-mm"):
        return Blocker("mmproj", "vision projector loaded")
    if facts.engine_build < SPEC_AUTO_MIN_BUILD:
        if facts.engine_build <= 0:
            return Blocker("build_unknown", "engine build unknown (self-built or fork)")
        return Blocker("build_old", f"engine b{facts.engine_build}, b{SPEC_AUTO_MIN_BUILD} at least")
    if facts.spec_auto_blocked:
        return Blocker("auto_blocked", facts.spec_auto_blocked)
    return None


def stateful_sampler(extra: Sequence[str]) -> str:
    """A sampler whose state moves on every draw (mirostat, adaptive-p), else ``""``.

    Probabilistic acceptance may emit a token other than the one the target
    model drew; such a sampler would then have advanced on a token the answer
    does not contain. Any occurrence counts, not only the last.
    """
    for raw in flag_values(extra, "--mirostat"):
        level = raw.strip()
        if level and level != "0":
            return f"--mirostat {level}"
    for value in flag_values(extra, "--samplers"):
        if "adaptive_p" in value.lower().replace("-", "_"):
            return "--samplers adaptive-p"
    for value in flag_values(extra, "--sampling-seq", "--sampler-seq"):
        if "a" in value:  # "a" is adaptive-p's letter in a sampling sequence
            return "--sampling-seq with adaptive-p"
    return ""


def n_max_args(preset: Mapping[str, str], extra: Sequence[str], facts: HostFacts) -> tuple[list[str], list[Note]]:
    """SPEC_N_MAX -> --spec-draft-n-max (spec 13.6); empty = the engine default."""
    raw = preset.get("SPEC_N_MAX", "").strip()
    if not raw:
        return [], []
    n = parse_int(raw)
    if n is None or n < 1 or n > SPEC_N_MAX_LIMIT:
        return [], [
            Note("spec.nmax_invalid", f"SPEC_N_MAX={raw} unreadable (1 to {SPEC_N_MAX_LIMIT} tokens): engine default")
        ]
    if not supports_spec_n_max(facts.help):
        return [], [Note("spec.nmax_unsupported", "this engine does not know --spec-draft-n-max: SPEC_N_MAX ignored")]
    if has_any_flag(extra, "--spec-draft-n-max") or facts.arg_env.get("LLAMA_ARG_SPEC_DRAFT_N_MAX", ""):
        return [], []
    return ["--spec-draft-n-max", str(n)], []


def sampling_args(
    preset: Mapping[str, str], extra: Sequence[str], facts: HostFacts, mode: str
) -> tuple[list[str], list[Note]]:
    """SPEC_SAMPLING -> --spec-draft-sampling (spec 13.7)."""
    sampling = "greedy"
    notes: list[Note] = []
    value = preset.get("SPEC_SAMPLING", "").strip().lower()
    if value == "probabilistic":
        sampler = stateful_sampler(extra)
        if mode == MODE_AUTO:
            notes.append(
                Note(
                    "spec.sampling_auto",
                    "SPEC_SAMPLING=probabilistic ignored with SPEC=auto (SPEC=mtp to choose it): greedy",
                )
            )
        elif sampler:
            notes.append(
                Note(
                    "spec.sampling_stateful",
                    f"SPEC_SAMPLING=probabilistic refused with {sampler} "
                    "(this sampler would advance on rejected tokens): greedy",
                )
            )
        elif not supports_probabilistic(facts.help):
            notes.append(
                Note(
                    "spec.sampling_unsupported",
                    "this engine does not know --spec-draft-sampling probabilistic: greedy",
                )
            )
        else:
            sampling = value
    elif value not in ("", "greedy"):
        notes.append(
            Note("spec.sampling_invalid", f"SPEC_SAMPLING={value} unreadable (greedy or probabilistic): greedy")
        )
    # greedy is exact whatever the sampling chain: pin it whenever the engine knows
    # the flag, so an upstream default change cannot change anything here.
    if (
        supports_spec_sampling(facts.help)
        and not has_any_flag(extra, "--spec-draft-sampling")
        and not facts.arg_env.get("LLAMA_ARG_SPEC_DRAFT_SAMPLING", "")
    ):
        return ["--spec-draft-sampling", sampling], notes
    return [], notes


def ngram_cost_notes(preset: Mapping[str, str], extra: Sequence[str], facts: HostFacts) -> list[Note]:
    """What long n-gram drafts cost, where it shows (spec 13.5)."""
    notes: list[Note] = []
    if facts.gguf is not None and facts.gguf.hybrid:
        notes.append(
            Note(
                "spec.cost_hybrid",
                "hybrid model: each n-gram draft copies the recurrent state (a checkpoint in host RAM) and reloads "
                "it when rejected — compare the time per turn, not only the throughput",
            )
        )
    if (
        cpu_weights(preset, extra, facts.arg_env, _block_count(facts))
        and facts.model_bytes > 0
        and facts.ram_mib > 0
        and facts.model_bytes > facts.ram_mib << 20
    ):
        notes.append(
            Note(
                "spec.cost_ram",
                "model larger than RAM, weights on CPU: a verification batch reads most experts of every layer — "
                "watch disk reads, not only tokens/s",
            )
        )
    if ngl_forced(preset, extra):
        notes.append(
            Note(
                "spec.cost_ngl",
                f"NGL forced (--fit inactive): the logits of {VERIFY_BATCH} positions per slot take "
                "a few tens of MiB of extra VRAM",
            )
        )
    return notes


def ngram_spec_args(
    preset: Mapping[str, str], extra: Sequence[str], facts: HostFacts, fallback: Blocker | None = None
) -> tuple[list[str], list[Note]]:
    """SPEC=ngram, or SPEC=mtp+ngram falling back to n-grams (``fallback`` says why).

    Never a --spec-draft-* flag: there is no draft model to tune.
    """
    args = ["--spec-type", "ngram-mod", *ngram_bounds()]
    text = (
        f"SPEC=ngram → n-grams from the context (ngram-mod, drafts of {NGRAM_N_MIN} to {NGRAM_N_MAX} tokens): "
        "distribution unchanged (every token verified), ~16 MB of RAM; mostly useful for code, measure it"
    )
    notes = _draft_is_model_notes(preset, facts)
    if fallback is None:
        notes.append(Note("spec.ngram", text))
        # An explicit --spec-type stops llama.cpp from picking the MTP head by itself.
        if draft_key(preset, facts):
            notes.append(
                Note("spec.ngram_draft_ignored", "MODEL_DRAFT ignored with SPEC=ngram: SPEC=mtp+ngram for both")
            )
        elif facts.gguf is not None and facts.gguf.has_nextn_tensor:
            notes.append(
                Note(
                    "spec.ngram_head_unused",
                    "the model's MTP head is unused with SPEC=ngram: SPEC=mtp+ngram for both",
                )
            )
    else:
        lead = f"SPEC=mtp+ngram: without MTP ({fallback.why}) → n-grams only. "
        notes.append(Note("spec.ngram_fallback", lead + text, code=fallback.code))
    if preset.get("SPEC_N_MAX", "").strip() or preset.get("SPEC_SAMPLING", "").strip():
        notes.append(
            Note(
                "spec.ngram_params_ignored",
                "SPEC_N_MAX and SPEC_SAMPLING ignored: n-grams have no draft to tune",
            )
        )
    return args, notes + ngram_cost_notes(preset, extra, facts)


def _draft_is_model_notes(preset: Mapping[str, str], facts: HostFacts) -> list[Note]:
    """Spec 13.9: said right before the mode note when MODEL_DRAFT is the main model."""
    if not facts.draft_is_model:
        return []
    key = preset.get("MODEL_DRAFT", "").strip()
    return [
        Note(
            "spec.draft_is_model",
            f"MODEL_DRAFT={key} is the main model itself: read as no MODEL_DRAFT (its own MTP head, no -md)",
        )
    ]


def _skip(mode: str, blocker: Blocker) -> tuple[list[str], list[Note], bool]:
    return [], [Note("spec.skip", f"SPEC={mode}: {blocker.why} — no speculative decoding", code=blocker.code)], False


def _forced_note(preset: Mapping[str, str], extra: Sequence[str], facts: HostFacts, mode: str, label: str) -> Note:
    text = f"SPEC={mode} → {label} forced: output unchanged, {_COST_SUFFIX}"
    if mode == MODE_MTP_NGRAM:
        text += "; n-grams too (ngram-mod, they take priority when they find a repetition)"
    placement = fit_blocker(preset, extra, facts)
    if placement or has_any_flag(extra, *DEVICE_FLAGS):
        text += (
            f"; manual placement ({placement or '--device'}): --fit does not count the draft, "
            "place it with -devd / -ngld if VRAM runs short"
        )
    if not ctx_fixed(preset, extra)[1]:
        text += "; context not a number: fit could shrink it to make room for the draft"
    if _arch_is(facts, "qwen4exp"):
        text += "; qwen4exp MTP very recent"
    return Note("spec.forced", text)


def spec_args(preset: Mapping[str, str], extra: Sequence[str], facts: HostFacts) -> tuple[list[str], list[Note], bool]:
    """Speculative flags, their notes, and whether SPEC=auto turned them on (spec 13.2)."""
    mode = spec_mode(preset)
    declined = _declined(mode, preset, extra, facts)
    if declined is not None:
        return declined
    # n-gram guards first: they hold for both n-gram forms.
    if mode in (MODE_NGRAM, MODE_MTP_NGRAM):
        blocker = ngram_blocker(preset, extra, facts, mode)
        if blocker:
            return _skip(mode, blocker)
    if mode == MODE_NGRAM:
        args, notes = ngram_spec_args(preset, extra, facts)
        return args, notes, False

    source = spec_source(mode, draft_key(preset, facts), facts)
    if mode == MODE_MTP_NGRAM and not source.is_mtp:
        # Passing an unusable MTP head would kill the engine at start ("failed to
        # create MTP context") and loop under systemd; n-grams need nothing.
        fallback = source.blocker or Blocker("draft_not_mtp", "MODEL_DRAFT is not an MTP head")
        args, notes = ngram_spec_args(preset, extra, facts, fallback)
        return args, notes, False
    if source.blocker:
        return _skip(mode, source.blocker)
    if source.quiet:
        return [], [], False
    return _draft_args(mode, source, preset, extra, facts)


def _declined(mode: str, preset: Mapping[str, str], extra: Sequence[str],
              facts: HostFacts) -> tuple[list[str], list[Note], bool] | None:
    """SPEC unreadable, off, or already set by hand: no flags, and the note that says why; None = go on."""
    if mode == SPEC_UNREADABLE:
        raw = preset.get("SPEC", "")
        return [], [Note("spec.invalid",
                         f"SPEC={raw} unreadable (off, auto, mtp, ngram or mtp+ngram): no speculative decoding")], False
    if mode == SPEC_OFF:
        # The probe does not run with SPEC off, so the raw key is what matters here.
        if preset.get("MODEL_DRAFT", "").strip():
            return [], [Note("spec.draft_ignored_off", "MODEL_DRAFT ignored: SPEC=off (auto or mtp to use it)")], False
        return [], [], False
    if spec_user_set(extra, facts.arg_env):
        return (
            [],
            [Note("spec.user_set", "speculative decoding already set in EXTRA_ARGS or LLAMA_ARG_*: SPEC ignored")],
            False,
        )
    return None


def _draft_args(mode: str, source: SpecSource, preset: Mapping[str, str], extra: Sequence[str],
                facts: HostFacts) -> tuple[list[str], list[Note], bool]:
    """A usable draft (an MTP head or a draft model): its flags, SPEC=auto's own blockers, the notes."""
    args = list(source.args)
    if mode == MODE_MTP_NGRAM:
        # One list rather than two --spec-type flags: easier to read in the log.
        args[-1] = f"{_DRAFT_MTP},ngram-mod"
        args += ngram_bounds()
    label = "MTP head" if source.is_mtp else f"draft {_draft_label(facts.draft)}"

    is_auto = False
    notes = _draft_is_model_notes(preset, facts)
    if mode == MODE_AUTO:
        blocker = spec_auto_blocker(preset, extra, facts)
        if blocker:
            return _skip(mode, blocker)
        is_auto = True
        notes.append(
            Note(
                "spec.auto",
                f"SPEC=auto → {label}: output unchanged (every token is verified by the model), {_COST_SUFFIX}. "
                "Measure prefill; SPEC=off to turn it off.",
            )
        )
    else:
        notes.append(_forced_note(preset, extra, facts, mode, label))
        if mode == MODE_MTP_NGRAM:
            notes += ngram_cost_notes(preset, extra, facts)

    n_max_flags, n_max_notes = n_max_args(preset, extra, facts)
    sampling_flags, sampling_notes = sampling_args(preset, extra, facts, mode)
    return [*args, *n_max_flags, *sampling_flags], [*notes, *n_max_notes, *sampling_notes], is_auto
