"""Whether a started engine runs its plan, by its /props (props.py), judged against real readings.

The /props rows are what llama.cpp b11434 (CPU build, Gemma-3-270M) reported here for each command line
(see _planner/expectations.py's docstring); the planned context and slots are the command line's.
"""

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._judgements.props import (
    props_problems,
    props_summary,
)

MODEL = "/m/gemma.gguf"


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


def test_props_summary_keeps_what_the_report_shows():
    assert props_summary(_props(4096, 2)) == {"n_ctx": 4096, "total_slots": 2, "model_path": MODEL,
                                              "model_alias": None, "build_info": "b11434-unknown"}
    assert props_summary({**_props(4096, 2), "model_alias": "gemma"})["model_alias"] == "gemma"
    assert props_summary(None) == {}
    assert props_summary({"default_generation_settings": "odd"})["n_ctx"] is None
