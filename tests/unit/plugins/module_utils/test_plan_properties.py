"""Properties of plan() over random presets and hosts (hypothesis).

The table-driven tests next door pin each rule's behaviour case by case; these
check what must hold for every input (the planner contract, docs/architecture.md, spec sections 1.3,
1.4, 1.5, 3, 5.1):

1. plan() raises nothing but PlanError, and every PlanError names the key or the
   EXTRA_ARGS word at fault (never the API key itself); the documented cases
   (BIN or MODEL missing, ENGINE=strata, --api-key in EXTRA_ARGS) always raise;
   the YAML path raises PresetError exactly for list/dict values and bad keys.
2. Every flag the planner adds itself is one it knows, at most once, in spec
   1.3 order, and either historical-and-safe-everywhere (listed below with the
   spec section that emits it without a help check) or gated on the spec 5.1
   capability marker of the help text given. With the real 11434 help, every
   one of them is a flag that engine lists.
3. Typed keys reach argv / env only in their canonical form (docs/planner.md:
   CTX=32k is -c 32768), and within what llama.cpp's std::stoi accepts.
4. Same inputs, equal plans (also with the preset's keys in another order),
   and the inputs are left untouched.
5. The API key never appears in argv, env, notes, warnings or the refusal.
6. EXTRA_ARGS tokens end argv verbatim, after the load-flag normalisation of
   spec section 6; that normalisation only adds the form this engine knows.
7. Notes come in spec 1.5 order.

Profiles: LLAMAFLEET_FUZZ_PROFILE=ci (default: 300 examples per property,
derandomized so CI is stable) or long (10,000 examples, random seed; see
bench/fuzz_plan.py); LLAMAFLEET_FUZZ_EXAMPLES=N overrides the count.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from ansible_collections.llamafleet.llamacpp.plugins.module_utils import planner
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.argv_tokens import flag_name, flag_value
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.facts import HostFacts
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.load_mode import normalize_load_flags
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.preset_text import join_args, split_args
from ansible_collections.llamafleet.llamacpp.plugins.module_utils.planner import Plan, PlanError, PresetError
from tests.unit.support.strategies import (
    EXTRA_TOKENS,
    INT32_MAX,
    KEY_VALUES,
    REAL_HELP,
    YAML_KEYS,
    YAML_VALUES,
    worlds,
)

PROFILE_ENV = "LLAMAFLEET_FUZZ_PROFILE"
EXAMPLES_ENV = "LLAMAFLEET_FUZZ_EXAMPLES"
_COMMON = {
    "deadline": None,
    "database": None,
    "print_blob": True,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
}
_COMMON["suppress_health_check"].append(HealthCheck.filter_too_much)  # hostile worlds are mostly refused
settings.register_profile("ci", max_examples=300, derandomize=True, **_COMMON)
settings.register_profile("long", max_examples=10_000, derandomize=False, **_COMMON)
# Applied per test (not load_profile): other hypothesis tests keep their own settings.
# LLAMAFLEET_FUZZ_EXAMPLES overrides the profile's example count (bench/fuzz_plan.py --examples).
FUZZ = settings(
    settings.get_profile(os.environ.get(PROFILE_ENV, "ci")),
    **({"max_examples": int(os.environ[EXAMPLES_ENV])} if os.environ.get(EXAMPLES_ENV) else {}),
)

# ---------------------------------------------------------------- spec section 3: the 39 keys

SPEC_KEYS = (
    "MODEL", "BIN", "CTX", "THREADS", "THREADS_BATCH", "BATCH", "UBATCH", "HOST", "PORT", "PARALLEL", "NGL",
    "KV_TYPE", "KV_TYPE_K", "KV_TYPE_V", "MMPROJ", "REASONING", "REASONING_BUDGET", "REASONING_PRESERVE", "API_KEY",
    "EXTRA_ARGS", "CUDA_VISIBLE_DEVICES", "CUDA_LAUNCH_QUEUES", "CUDA_GRAPH_OPT", "OP_OFFLOAD_MIN_BATCH",
    "FIT_TARGET", "CACHE_RAM", "CACHE_ISOLATE", "SLOT_PERSIST", "SIDE_SLOT", "CTX_CHECKPOINTS", "CKPT_MIN_STEP",
    "SPEC", "MODEL_DRAFT", "SPEC_N_MAX", "SPEC_SAMPLING", "SPLIT_MODE", "LOAD_GUARD", "EXTERNAL", "ENGINE",
)  # fmt: skip


# llamafleet's own keys that the strategies generate too (METRICS has its own table tests only).
OWN_KEYS = ("CHAT_TEMPLATE",)


def test_strategies_cover_every_preset_key_of_spec_section_3():
    assert len(SPEC_KEYS) == 39
    assert sorted(KEY_VALUES) == sorted(SPEC_KEYS + OWN_KEYS)


# ---------------------------------------------------------------- planner flags: arity, spec 1.3 order, gates

# flag -> (takes a value, argv item of spec section 1.3)
PLANNER_FLAGS: dict[str, tuple[bool, int]] = {
    "-m": (True, 2),
    "-c": (True, 3),
    "-t": (True, 4),
    "-tb": (True, 5),
    "-b": (True, 6),
    "-ub": (True, 7),
    "--host": (True, 8),
    "--port": (True, 9),
    "--parallel": (True, 10),
    "--no-kv-unified": (False, 10),
    "-ngl": (True, 11),
    "--fit-target": (True, 12),
    "-sm": (True, 13),
    "-ts": (True, 13),
    "-fa": (True, 13),
    "-ctk": (True, 14),
    "-ctv": (True, 15),
    "--flash-attn": (False, 15),
    "--mmproj": (True, 16),
    "--chat-template": (True, 16),  # addition (chat_template.py): after the projector, before reasoning
    "--chat-template-file": (True, 16),
    "--reasoning": (True, 17),
    "--reasoning-budget": (True, 17),
    "--reasoning-preserve": (False, 18),
    "--no-reasoning-preserve": (False, 18),
    "--api-key-file": (True, 19),  # the planner contract, docs/architecture.md: the key file, never --api-key
    "--cache-ram": (True, 20),
    "--slot-save-path": (True, 21),
    "--ctx-checkpoints": (True, 22),
    "--checkpoint-min-step": (True, 23),
    "-md": (True, 24),
    "--spec-type": (True, 24),
    "--spec-ngram-mod-n-match": (True, 24),
    "--spec-ngram-mod-n-min": (True, 24),
    "--spec-ngram-mod-n-max": (True, 24),
    "--spec-draft-n-max": (True, 24),
    "--spec-draft-sampling": (True, 24),
}

# Emitted without looking at the help: every llama-server generation knows them.
UNCONDITIONAL = {
    "-m": "spec 1.3 item 2",
    "-c": "spec 1.3 item 3 (and 8.2: 2×CTX with SIDE_SLOT, gated through --no-kv-unified)",
    "-t": "spec 7.1 (THREADS, or the container CPU budget)",
    "-tb": "spec 7.1 (THREADS_BATCH, or the batch-CPU guard)",
    "-b": "spec 1.3 item 6",
    "-ub": "spec 1.3 item 7",
    "--host": "spec 1.3 item 8",
    "--port": "spec 1.3 item 9",
    "--parallel": "spec 8.1 (default 1 explicitly)",
    "-ctk": "spec 9.1 (KV_TYPE/KV_TYPE_K verbatim, never checked)",
    "-ctv": "spec 9.1 (KV_TYPE/KV_TYPE_V verbatim, never checked)",
    "--mmproj": "spec 15 (MMPROJ resolved)",
    "--reasoning-budget": "spec 10.1-10.2 (with an active REASONING: 'No help check')",
}


def _ngl_auto(help_text: str) -> bool:
    """Spec 5.1 ngl-auto: 'auto' within 400 characters of the first --n-gpu-layers (else -ngl)."""
    start = help_text.find("--n-gpu-layers")
    if start < 0:
        start = help_text.find("-ngl")
    return start >= 0 and "'auto'" in help_text[start : start + 400]


def _tensor(h: str) -> bool:
    return "{none,layer,row,tensor}" in h


def _mtp(h: str) -> bool:
    return "draft-mtp" in h and "--spec-draft-n-max" in h


def _spec_type_gate(h: str, value: str) -> bool:
    gates = {
        "draft-mtp": _mtp(h),
        "draft-simple": "--spec-type" in h and "draft-simple" in h,
        "ngram-mod": "--spec-ngram-mod-n-match" in h,
        "draft-mtp,ngram-mod": _mtp(h) and "--spec-ngram-mod-n-match" in h,
    }
    return gates.get(value, False)


# flag -> (help, value) -> the spec 5.1 capability that allows it. Written from the
# spec's table, independently of capabilities.py.
GATED: dict[str, Callable[[str, str], bool]] = {
    # spec 8.2 step 6 (SIDE_SLOT)
    "--no-kv-unified": lambda h, v: "--no-kv-unified" in h,
    # spec 5.3: "-ngl auto" only where the engine fits layers itself; other values are
    # the historical form, valid on every engine (5.3 table, 13.10 "-ngl all")
    "-ngl": lambda h, v: v != "auto" or _ngl_auto(h) or "--load-mode" in h,
    # spec 8.3 step 3
    "--fit-target": lambda h, v: "--fit-target" in h,
    # spec 13.10 step 3: -sm tensor, -ts, -fa on only once tensor split is offered
    "-sm": lambda h, v: _tensor(h),
    "-ts": lambda h, v: _tensor(h),
    "-fa": lambda h, v: _tensor(h),
    # addition (flash_attn.py): a quantised V cache on an engine whose --flash-attn is a bare switch
    "--flash-attn": lambda h, v: "--flash-attn" in h and not re.search(r"--flash-attn\s+[\[{<A-Z]", h),
    # addition (chat_template.py): a name the help lists (any built-in-shaped name when the help is unknown), or a
    # file where the help has the flag
    "--chat-template": lambda h, v: (not h.strip() and re.fullmatch(r"[a-z0-9][a-z0-9._-]*", v) is not None)
    or re.search(rf"list of built-in templates:[^(]*(?<![\w.-]){re.escape(v)}(?![\w.-])", h) is not None,
    "--chat-template-file": lambda h, v: v.startswith("/") and (not h.strip() or "--chat-template-file" in h),
    # spec 10.1: "--reasoning off" needs the flag; an ACTIVE value is emitted with no help check
    "--reasoning": lambda h, v: v != "off" or "--reasoning " in h,
    # spec 10.3
    "--reasoning-preserve": lambda h, v: "--no-reasoning-preserve" in h,
    "--no-reasoning-preserve": lambda h, v: "--no-reasoning-preserve" in h,
    # the planner contract, docs/architecture.md
    "--api-key-file": lambda h, v: "--api-key-file" in h,
    # spec 12.1 step 2, 12.2, 12.4 parts A, B and C
    "--cache-ram": lambda h, v: "--cache-ram" in h,
    "--slot-save-path": lambda h, v: "--slot-save-path" in h,
    "--ctx-checkpoints": lambda h, v: "--ctx-checkpoints" in h,
    "--checkpoint-min-step": lambda h, v: "--checkpoint-min-step" in h,
    # spec 13.3 / 13.5 / 13.6 / 13.7; -md follows its --spec-type (checked there)
    "-md": lambda h, v: _mtp(h) or ("--spec-type" in h and "draft-simple" in h),
    "--spec-type": _spec_type_gate,
    "--spec-ngram-mod-n-match": lambda h, v: "--spec-ngram-mod-n-match" in h,
    "--spec-ngram-mod-n-min": lambda h, v: "--spec-ngram-mod-n-match" in h,
    "--spec-ngram-mod-n-max": lambda h, v: "--spec-ngram-mod-n-match" in h,
    "--spec-draft-n-max": lambda h, v: "--spec-draft-n-max" in h,
    "--spec-draft-sampling": lambda h, v: (
        "--spec-draft-sampling" in h and (v != "probabilistic" or "probabilistic" in h)
    ),
}


def test_every_planner_flag_is_classified():
    assert set(UNCONDITIONAL) | set(GATED) == set(PLANNER_FLAGS)
    assert not set(UNCONDITIONAL) & set(GATED)


def test_every_planner_flag_is_a_flag_of_the_real_engine():
    for flag in PLANNER_FLAGS:
        assert re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", REAL_HELP), flag


# ---------------------------------------------------------------- helpers


def normalized_extra(preset: Mapping[str, str], facts: HostFacts) -> list[str]:
    return planner.normalize_extra(split_args(preset.get("EXTRA_ARGS", "")), facts.help)[0]


def planner_pairs(result: Plan, extra: list[str]) -> list[tuple[str, str | None]]:
    """The planner's own part of argv (after argv[0], before EXTRA) as (flag, value) pairs."""
    own = result.argv[1 : len(result.argv) - len(extra)]
    pairs: list[tuple[str, str | None]] = []
    i = 0
    while i < len(own):
        flag = own[i]
        assert flag in PLANNER_FLAGS, f"unknown planner flag {flag!r} in {own}"
        takes_value = PLANNER_FLAGS[flag][0]
        if takes_value:
            assert i + 1 < len(own), f"{flag} without its value in {own}"
            pairs.append((flag, own[i + 1]))
            i += 2
        else:
            pairs.append((flag, None))
            i += 1
    return pairs


def expect_plan_error(preset: Mapping[str, str], facts: HostFacts) -> bool:
    """The structural PlanError cases of plan(), which raise whatever else the preset holds.

    EXTERNAL=1 returns first (an EXTERNAL that is neither 0 nor 1 is itself refused).
    """
    if preset.get("EXTERNAL", "").strip() == "1":
        return False
    return (
        preset.get("ENGINE", "").strip().lower() == "strata"
        or not (facts.bin or preset.get("BIN", "").strip())
        or not (facts.model or preset.get("MODEL", "").strip())
    )


def check_refusal(err: PlanError, preset: Mapping[str, str]) -> None:
    """A refusal names what is wrong: its key (and then the key is in the message) or its EXTRA_ARGS word."""
    message = str(err)
    assert err.key, message
    assert err.key in message, message
    if err.key == "EXTRA_ARGS":
        shown = (err.token in message) if err.token else False
        assert shown or repr(err.token) in message, message
    secret = preset.get("API_KEY", "").strip()
    if len(secret) >= 4:
        assert secret not in message, "a refusal quoted the API key"


def attempt(preset: Mapping[str, str], facts: HostFacts) -> Plan | PlanError:
    try:
        return planner.plan(preset, facts)
    except PlanError as err:
        check_refusal(err, preset)
        return err


def planned(preset: Mapping[str, str], facts: HostFacts) -> Plan:
    """plan() for worlds it accepts; refused worlds are checked (named refusal) and skipped (assume)."""
    result = attempt(preset, facts)
    if expect_plan_error(preset, facts):
        assert isinstance(result, PlanError)
    assume(isinstance(result, Plan))
    assume(not result.external)
    return result


def canonical_int(text: str | None, low: int, high: int) -> bool:
    """Decimal as str(int) writes it, within [low, high]."""
    if text is None or not re.fullmatch(r"-?[0-9]+", text) or str(int(text)) != text:
        return False
    return low <= int(text) <= high


def lowered(preset: Mapping[str, str], key: str) -> str:
    return preset.get(key, "").strip().lower()


KV_TYPES = ("f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "iq4_nl", "q5_0", "q5_1")
_SUFFIXES = {"": 1, "k": 1024, "m": 1024 * 1024}


def count_of(text: str, default: str) -> str:
    """The canonical token count of a typed key (docs/planner.md): decimal, k = 1024, m = 1048576."""
    match = re.fullmatch(r"\+?([0-9]+)([kKmM]?)", text.strip())
    if not text.strip():
        return default
    assert match, text
    return str(int(match.group(1)) * _SUFFIXES[match.group(2).lower()])


# ---------------------------------------------------------------- 1. no crash


@FUZZ
@given(worlds())
def test_plan_raises_only_named_refusals(world):
    preset, facts = world
    result = attempt(preset, facts)
    if expect_plan_error(preset, facts) or any(
        flag_name(tok) == "--api-key" for tok in split_args(preset.get("EXTRA_ARGS", ""))
    ):
        assert isinstance(result, PlanError) or result.external
    if isinstance(result, PlanError):
        return
    if result.external:
        assert result.argv == []
        assert result.env == {}
        return
    assert result.argv[0] == (facts.bin or preset["BIN"].strip())
    assert all(isinstance(tok, str) for tok in result.argv)
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in result.env.items())
    for note in [*result.notes, *result.warnings]:
        assert re.fullmatch(r"[a-z]+(\.[a-z_]+)?", note.id), note
        assert note.text, note
    assert result.refusal is None or result.refusal.id == "load.refuse"


@FUZZ
@given(st.dictionaries(YAML_KEYS | st.integers(), YAML_VALUES, max_size=6), worlds())
def test_yaml_presets_raise_only_preset_error(data, world):
    facts = world[1]
    bad = any(
        not isinstance(k, str) or not k.strip() or isinstance(v, (list, dict)) for k, v in data.items()
    )
    if bad:
        with pytest.raises(PresetError):
            planner.normalize_preset(data)
        return
    preset = planner.normalize_preset(data)
    assert all(isinstance(v, str) for v in preset.values())
    first, again = attempt(preset, facts), attempt(dict(preset), facts)
    if isinstance(first, PlanError):
        assert isinstance(again, PlanError)
        assert str(first) == str(again)
    else:
        assert first == again


# ---------------------------------------------------------------- 2. flags the planner adds


@FUZZ
@given(worlds())
def test_planner_flags_are_known_ordered_and_gated_on_the_help(world):
    preset, facts = world
    result = planned(preset, facts)
    pairs = planner_pairs(result, normalized_extra(preset, facts))
    flags = [flag for flag, _value in pairs]
    assert len(flags) == len(set(flags)), f"a planner flag twice: {flags}"
    items = [PLANNER_FLAGS[flag][1] for flag in flags]
    assert items == sorted(items), f"not in spec 1.3 order: {flags}"
    for flag, value in pairs:
        if flag in GATED:
            assert GATED[flag](facts.help, value or ""), f"{flag} {value} emitted but the help lacks its capability"
    if facts.help == REAL_HELP:
        for flag in flags:
            assert re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", facts.help), flag
    # Spec 13: never emitted by the planner.
    assert not {"--api-key", "--spec-default", "--draft", "--draft-max", "--draft-n", "-ctkd", "-ctvd"} & set(flags)


# ---------------------------------------------------------------- 3. values of validated keys


def _check_fit_target(value: str, preset: Mapping[str, str]) -> None:
    fields = value.split(",")
    assert 1 <= len(fields) <= 8, value
    for field in fields:
        assert canonical_int(field, 1024, 9_999_999), value
    assert preset.get("FIT_TARGET", "").strip(), "--fit-target without FIT_TARGET"


def _check_values(preset: Mapping[str, str], facts: HostFacts, result: Plan, extra: list[str]) -> None:
    values = dict(planner_pairs(result, extra))
    side_slot = "--no-kv-unified" in values

    if "--fit-target" in values:
        _check_fit_target(values["--fit-target"], preset)
    if "--cache-ram" in values:
        assert canonical_int(values["--cache-ram"], -1, INT32_MAX), values["--cache-ram"]
    if "-t" in values:
        assert canonical_int(values["-t"], 1, INT32_MAX), values["-t"]
    if "-tb" in values:
        # spec 7.1 step 3: the -t value of EXTRA_ARGS is copied as written (the user's own flag).
        copied = flag_value(extra, "-t", "--threads")
        assert canonical_int(values["-tb"], 0, INT32_MAX) or values["-tb"] == copied, values["-tb"]
    if "--ctx-checkpoints" in values:
        assert canonical_int(values["--ctx-checkpoints"], 0, INT32_MAX), values["--ctx-checkpoints"]
    if "--checkpoint-min-step" in values:
        assert canonical_int(values["--checkpoint-min-step"], 1, INT32_MAX), values["--checkpoint-min-step"]
    if "--spec-draft-n-max" in values:
        assert canonical_int(values["--spec-draft-n-max"], 1, 64), values["--spec-draft-n-max"]
    if "--spec-draft-sampling" in values:
        assert values["--spec-draft-sampling"] in ("greedy", "probabilistic")
        if values["--spec-draft-sampling"] == "probabilistic":
            assert lowered(preset, "SPEC_SAMPLING") == "probabilistic"
    if "--reasoning-preserve" in values:
        assert lowered(preset, "REASONING_PRESERVE") == "on"
    if "--no-reasoning-preserve" in values:
        assert lowered(preset, "REASONING_PRESERVE") == "off"
    if "--reasoning" in values:
        assert values["--reasoning"] in ("off", "on", "auto"), values["--reasoning"]
        assert ("--reasoning-budget" in values) == (values["--reasoning"] != "off")
    if "--reasoning-budget" in values:
        budget = preset.get("REASONING_BUDGET", "").strip().lstrip("+") or "-1"
        assert values["--reasoning-budget"] == str(int(budget))

    # Typed keys in their canonical form (docs/planner.md), and the side slot's doubled context.
    if side_slot:
        assert canonical_int(values["-c"], 2, INT32_MAX), values["-c"]
        assert int(values["-c"]) % 2 == 0, values["-c"]
        assert values["--parallel"] == "2"
    else:
        assert values["-c"] == count_of(preset.get("CTX", ""), "32768"), (preset.get("CTX"), values["-c"])
    assert values["-b"] == count_of(preset.get("BATCH", ""), "2048")
    assert values["-ub"] == count_of(preset.get("UBATCH", ""), "512")
    assert canonical_int(values["--port"], 1, 65535), values["--port"]
    assert int(values["--port"]) == int(preset.get("PORT", "").strip() or "8080")
    host = values["--host"]
    assert host == host.strip()
    assert not any(ch.isspace() for ch in host), host
    if preset.get("HOST", "").strip() in ("", "0.0.0.0", "127.0.0.1", "localhost", "::", "::1"):
        assert host == (preset.get("HOST", "").strip() or "0.0.0.0")
    if "--parallel" in values and not side_slot:
        assert canonical_int(values["--parallel"], 1, INT32_MAX) or values["--parallel"] == "-1", values["--parallel"]
        if values["--parallel"] == "-1":
            assert lowered(preset, "PARALLEL") in ("auto", "-1")
    assert values["-m"] == (facts.model or preset.get("MODEL", "").strip())
    if "-ngl" in values:
        ngl = preset.get("NGL", "").strip()
        written = ngl.lower() if ngl.lower() in ("auto", "all") else count_of(ngl, "999")
        assert values["-ngl"] in ("auto", "all", "999", written), values["-ngl"]
    for flag, key in (("-ctk", "KV_TYPE_K"), ("-ctv", "KV_TYPE_V")):
        if flag in values:
            assert values[flag] in KV_TYPES, values[flag]
            assert values[flag] == (preset.get(key, "").strip() or preset.get("KV_TYPE", "").strip()).lower()
    if "-sm" in values:
        assert values["-sm"] == "tensor"
        assert values.get("-fa", "on") == "on"
        shares = values.get("-ts", "0,0").split(",")
        assert len(shares) >= 2, shares
        assert all(canonical_int(s, 0, 100) for s in shares), shares
    for flag, fact in (("--mmproj", facts.mmproj), ("--api-key-file", facts.api_key_file),
                       ("--slot-save-path", facts.slot_dir), ("-md", facts.draft)):  # fmt: skip
        if flag in values:
            assert fact, flag
            assert values[flag] == fact
    if "--spec-type" in values:
        assert values["--spec-type"] in ("draft-mtp", "draft-simple", "ngram-mod", "draft-mtp,ngram-mod")
    for flag, bound in (("--spec-ngram-mod-n-match", "24"), ("--spec-ngram-mod-n-min", "48"),
                        ("--spec-ngram-mod-n-max", "64")):  # fmt: skip
        assert values.get(flag, bound) == bound


def _check_env(preset: Mapping[str, str], env: Mapping[str, str]) -> None:
    allowed = {
        "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "GGML_CUDA_ALLREDUCE", "CUDA_SCALE_LAUNCH_QUEUES",
        "GGML_CUDA_GRAPH_OPT", "GGML_OP_OFFLOAD_MIN_BATCH",
    }  # fmt: skip
    assert set(env) <= allowed, env
    if "CUDA_VISIBLE_DEVICES" in env:
        assert env["CUDA_VISIBLE_DEVICES"] == preset["CUDA_VISIBLE_DEVICES"].strip() != ""
        assert env["CUDA_VISIBLE_DEVICES"].lower() != "all"
        assert env["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"
    else:
        assert "CUDA_DEVICE_ORDER" not in env
    if "CUDA_SCALE_LAUNCH_QUEUES" in env:
        assert env["CUDA_SCALE_LAUNCH_QUEUES"] in ("0.25x", "0.5x", "2x", "4x")
    if "GGML_CUDA_GRAPH_OPT" in env:
        assert env["GGML_CUDA_GRAPH_OPT"] == "1"
        assert lowered(preset, "CUDA_GRAPH_OPT") == "on"
    if "GGML_OP_OFFLOAD_MIN_BATCH" in env:
        assert canonical_int(env["GGML_OP_OFFLOAD_MIN_BATCH"], 1, 1_048_576), env["GGML_OP_OFFLOAD_MIN_BATCH"]
        assert preset.get("OP_OFFLOAD_MIN_BATCH", "").strip()
    if "GGML_CUDA_ALLREDUCE" in env:
        assert env["GGML_CUDA_ALLREDUCE"] == "internal"


@FUZZ
@given(worlds())
def test_validated_keys_reach_argv_and_env_only_as_valid_values(world):
    preset, facts = world
    result = planned(preset, facts)
    _check_values(preset, facts, result, normalized_extra(preset, facts))
    _check_env(preset, result.env)


# ---------------------------------------------------------------- 4. determinism


@FUZZ
@given(worlds())
def test_same_inputs_give_equal_plans_and_inputs_stay_untouched(world):
    preset, facts = world
    preset_before = dict(preset)
    arg_env_before, user_env_before = dict(facts.arg_env), dict(facts.user_env)
    first = attempt(preset, facts)
    again = attempt(preset, facts)
    reordered = attempt(dict(reversed(list(preset.items()))), facts)
    if isinstance(first, PlanError):
        assert isinstance(again, PlanError)
        assert str(first) == str(again)
        assert isinstance(reordered, PlanError)
    else:
        assert first == again == reordered
    assert preset == preset_before
    assert (dict(facts.arg_env), dict(facts.user_env)) == (arg_env_before, user_env_before)


# ---------------------------------------------------------------- 5. the API key


@FUZZ
@given(worlds(with_api_key=True))
def test_the_api_key_never_leaves_the_preset(world):
    preset, facts = world
    secret = preset["API_KEY"].strip()
    assume(not any(secret in v for k, v in preset.items() if k != "API_KEY"))
    result = planned(preset, facts)
    places = [*result.argv, *result.env.values(), *result.env]
    places += [n.text for n in [*result.notes, *result.warnings]]
    if result.refusal is not None:
        places.append(result.refusal.text)
    assert not [p for p in places if secret in p]
    assert "--api-key" not in result.argv
    own = dict(planner_pairs(result, normalized_extra(preset, facts)))
    assert ("--api-key-file" in own) != result.api_key_via_env


# ---------------------------------------------------------------- 6. EXTRA_ARGS last, verbatim


@FUZZ
@given(worlds())
def test_extra_args_end_argv_verbatim_after_load_flag_normalisation(world):
    preset, facts = world
    result = planned(preset, facts)
    raw = split_args(preset.get("EXTRA_ARGS", ""))
    extra = normalized_extra(preset, facts)
    if extra:
        assert result.argv[-len(extra) :] == extra
    knows_mmap = bool(re.search(r"(?:^|[\s,])--mmap(?:[\s,]|$)", facts.help)) or not facts.help
    load_normalized = normalize_load_flags(raw, "--load-mode" in facts.help, knows_mmap)[0]
    # --flag=value is written as two words only for flags this engine lists (none without a help).
    for token in extra:
        name = flag_name(token)
        if name != token and name.startswith("-") and facts.help:
            assert not re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", facts.help), token
    if not facts.help:
        assert extra == load_normalized
    if not knows_mmap:
        assert "--mmap" not in extra
    # Spec 6: the normalisation only ever adds the form this engine understands.
    added = [tok for tok in load_normalized if tok not in raw]
    if "--load-mode" in facts.help:
        assert set(added) <= {"--load-mode", "mlock", "mmap+mlock", "none", "mmap"}, added
        assert not {"--mlock", "--no-mmap", "--mmap"} & set(extra)
    else:
        assert set(added) <= {"--mlock", "--no-mmap"}, added
        assert "--load-mode" not in extra
        assert not any(tok.startswith("--load-mode=") for tok in extra)


@FUZZ
@given(EXTRA_TOKENS)
def test_join_args_and_split_args_round_trip(tokens):
    assert split_args(join_args(tokens)) == tokens


# ---------------------------------------------------------------- 7. notes order (spec 1.5)

NOTE_RANKS = [
    ("engine.", 0), ("preset.", 0), ("env.", 0), ("load.dio", 1), ("load.rewritten", 1), ("extra.", 1),
    ("split.", 2), ("queues.", 3), ("graphopt.", 4), ("opoffload.", 5),
    ("threads.", 6), ("side.", 7), ("ngl.", 8), ("fit.", 9), ("reasoning.", 10), ("preserve.", 11),
    ("apikey.", 12), ("cache.", 13), ("persist.", 14), ("ckpt.", 15), ("step.", 15), ("spec.", 16),
    ("fidelity.", 17), ("lossy.", 18), ("moe.", 19),
]  # fmt: skip  # load.warn is a warning only (the planner contract, docs/architecture.md), never a note


def _rank(note_id: str) -> int:
    return next(rank for prefix, rank in NOTE_RANKS if note_id.startswith(prefix))


@FUZZ
@given(worlds())
def test_notes_follow_spec_section_1_5_order(world):
    preset, facts = world
    result = planned(preset, facts)
    ranks = [_rank(n.id) for n in result.notes]
    assert ranks == sorted(ranks), [n.id for n in result.notes]
