"""What a running engine must report in /props for a plan (expectations.py), judged against real readings.

The /props rows are what llama.cpp b11434 (CPU build, Gemma-3-270M) reported here for each command line
(see the module's docstring); the planned context and slots are the command line's.
"""

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.expectations import (
    expectations,
    props_problems,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.facts import GGUFInfo

GEMMA = GGUFInfo(arch="gemma3", context_length=32768)
MODEL = "/m/gemma.gguf"


@pytest.mark.parametrize(
    ("argv", "gguf", "fits", "want"),
    [
        (["/b", "-m", MODEL, "-c", "4096", "--parallel", "2"], None, True, (4096, 2, "")),
        (["/b", "-m", MODEL, "-c", "4096", "--parallel", "-1"], None, True, (4096, 0, "")),
        (["/b", "-m", MODEL, "-c", "0"], GEMMA, False, (32768, 0, "")),
        (["/b", "-m", MODEL, "-c", "0"], GEMMA, True, (0, 0, "")),  # --fit may shrink it
        (["/b", "-m", MODEL, "-c", "0"], None, False, (0, 0, "")),  # the model's context is unknown
        (["/b", "-m", MODEL, "-c", "4096", "-c", "1024", "-np", "3"], None, True, (1024, 3, "")),  # the last wins
        (["/b", "-m", MODEL, "--ctx-size", "2048", "--kv-unified"], None, True, (2048, 0, "on")),
        (["/b", "-m", MODEL, "-c", "2048", "-kvu", "--no-kv-unified"], None, True, (2048, 0, "off")),
        (["/b", "-m", MODEL, "-c", "2048", "--kv-unified-per-slot", "512"], None, True, (0, 0, "")),
        (["/b", "-m", MODEL], None, True, (0, 0, "")),
        ([], None, True, (0, 0, "")),  # an external preset: nothing runs
    ],
)
def test_expectations(argv, gguf, fits, want):
    got = expectations(argv, gguf, engine_fits_itself=fits)
    assert (got.ctx, got.slots, got.kv_unified) == want
    assert got.model_path == (MODEL if argv else "")


def _props(n_ctx, slots, model=MODEL):
    return {"default_generation_settings": {"n_ctx": n_ctx}, "total_slots": slots, "model_path": model,
            "build_info": "b11434-unknown"}


def _expect(ctx=0, slots=0, unified="", model=MODEL):
    return {"ctx": ctx, "slots": slots, "kv_unified": unified, "model_path": model}


# Real readings (command line -> /props) on b11434: each must be judged "runs the plan".
REAL = [
    ("-c 2048 -np 2", _expect(2048, 2), _props(1024, 2)),
    ("-c 2048 -np 2 --kv-unified", _expect(2048, 2, "on"), _props(2048, 2)),
    ("-c 2000 -np 1", _expect(2000, 1), _props(2048, 1)),
    ("-c 3000 -np 3", _expect(3000, 3), _props(1024, 3)),
    ("-c 4096 (np auto)", _expect(4096, 0), _props(4096, 4)),
    ("-c 0 -np 1 (model context)", _expect(32768, 1), _props(32768, 1)),
]


@pytest.mark.parametrize(("label", "expected", "props"), REAL, ids=[r[0] for r in REAL])
def test_real_readings_run_the_plan(label, expected, props):
    assert props_problems(props, expected) == []


@pytest.mark.parametrize(
    ("expected", "props", "problem"),
    [
        (_expect(4096, 1), _props(1024, 1), "n_ctx is 1024 per slot with 1 slot(s), the plan has a context of 4096"),
        # -c 4k read by std::stoi: 4 tokens, padded to 256.
        (_expect(4096, 1), _props(256, 1), "n_ctx is 256"),
        (_expect(2048, 2), _props(1024, 3), "total_slots is 3, the plan has 2"),
        (_expect(2048, 2, "off"), _props(2048, 2), "n_ctx is 2048 per slot with 2 slot(s)"),
        (_expect(2048, 2, "on"), _props(1024, 2), "n_ctx is 1024 per slot"),
        (_expect(2048, 1), _props(2048, 1, "/m/other.gguf"), "model_path is '/m/other.gguf'"),
        (_expect(2048, 1), {"total_slots": 1}, "/props did not give"),
        (_expect(2048, 1), _props("2048", 1), "/props did not give"),
        (_expect(2048, 1), [], "/props did not give"),
    ],
)
def test_contradictions_are_named(expected, props, problem):
    problems = props_problems(props, expected)
    assert len(problems) >= 1
    assert any(problem in p for p in problems), problems


def test_what_the_plan_leaves_to_the_engine_is_not_judged():
    assert props_problems(_props(123456, 7, "/any"), _expect(0, 0, "", "")) == []
