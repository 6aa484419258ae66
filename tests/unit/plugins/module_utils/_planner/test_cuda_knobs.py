"""Spec sections 8.4 and 8.5: CUDA_GRAPH_OPT and OP_OFFLOAD_MIN_BATCH."""

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.cuda_knobs import (
    graph_opt_env,
    op_offload_min_batch_env,
    op_offload_threshold,
    qkv_split_risk,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.facts import HostFacts

GRAPH_SET_TEXT = (
    "GGML_CUDA_GRAPH_OPT=1 (CUDA_GRAPH_OPT, experimental) — if the engine stops on a GGML_ASSERT, "
    "set CUDA_GRAPH_OPT=off and restart"
)


def _facts(user_env=None, **arg_env: str) -> HostFacts:
    return HostFacts(arg_env=arg_env, user_env=user_env or {})


# --- CUDA_GRAPH_OPT ----------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "place", "facts"),
    [
        pytest.param(None, [], _facts(), id="absent"),
        pytest.param("", [], _facts(), id="empty"),
        pytest.param("off", [], _facts(), id="off"),
        pytest.param(" OFF ", [], _facts(), id="off-any-case-trimmed"),
        pytest.param("on", [], _facts({"GGML_CUDA_GRAPH_OPT": "0"}), id="user-env-0"),
        pytest.param("on", [], _facts({"GGML_CUDA_GRAPH_OPT": "1"}), id="user-env-1"),
        pytest.param("on", ["-sm", "row"], _facts({"GGML_CUDA_GRAPH_OPT": "0"}), id="user-env-beats-refusal"),
    ],
)
def test_graph_opt_silent(value, place, facts):
    preset = {} if value is None else {"CUDA_GRAPH_OPT": value}
    assert graph_opt_env(preset, place, facts) == ("", [])


@pytest.mark.parametrize(
    ("value", "place", "facts"),
    [
        pytest.param("on", [], _facts(), id="on"),
        pytest.param("ON", [], _facts(), id="on-upper"),
        pytest.param(" On ", [], _facts(), id="on-trimmed"),
        pytest.param("on", ["--device", "CUDA1,CUDA0", "-ts", "0.6,0.4"], _facts(), id="layer-split-with-ts"),
        pytest.param("on", ["-sm", "layer"], _facts(), id="sm-layer"),
        pytest.param("on", ["-sm", "none"], _facts(), id="sm-none"),
        pytest.param("on", ["-sm", "layer"], _facts(LLAMA_ARG_SPLIT_MODE="tensor"), id="extra-layer-beats-env"),
        pytest.param("on", ["-ot", "ffn_.*_exps=CPU", "--n-cpu-moe", "40"], _facts(), id="expert-override-fine"),
        pytest.param("on", [], _facts(LLAMA_ARG_OVERRIDE_TENSOR="exps=CPU"), id="env-expert-override-fine"),
        pytest.param("on", [], _facts({"GGML_OP_OFFLOAD_MIN_BATCH": "64"}), id="other-user-env-irrelevant"),
    ],
)
def test_graph_opt_set(value, place, facts):
    got, notes = graph_opt_env({"CUDA_GRAPH_OPT": value}, place, facts)
    assert got == "1"
    assert [(n.id, n.text) for n in notes] == [("graphopt.set", GRAPH_SET_TEXT)]


@pytest.mark.parametrize(
    ("value", "facts", "text"),
    [
        pytest.param("2", _facts(), "CUDA_GRAPH_OPT=2 ignored (on or off)", id="number"),
        pytest.param(" Yes ", _facts(), "CUDA_GRAPH_OPT=Yes ignored (on or off)", id="yes-raw-trimmed"),
        pytest.param("true", _facts(), "CUDA_GRAPH_OPT=true ignored (on or off)", id="true"),
        pytest.param(
            "1", _facts({"GGML_CUDA_GRAPH_OPT": "1"}), "CUDA_GRAPH_OPT=1 ignored (on or off)", id="invalid-before-env"
        ),
    ],
)
def test_graph_opt_invalid(value, facts, text):
    got, notes = graph_opt_env({"CUDA_GRAPH_OPT": value}, [], facts)
    assert got == ""
    assert [(n.id, n.text) for n in notes] == [("graphopt.invalid", text)]


@pytest.mark.parametrize(
    ("place", "facts", "code", "why"),
    [
        pytest.param(["-sm", "row"], _facts(), "split_mode", "-sm row", id="sm-row"),
        pytest.param(["--split-mode=ROW"], _facts(), "split_mode", "-sm row", id="split-mode-row-any-case"),
        pytest.param(["-sm", "tensor"], _facts(), "split_mode", "-sm tensor", id="accepted-tensor-split-view"),
        pytest.param([], _facts(LLAMA_ARG_SPLIT_MODE="tensor"), "split_mode", "-sm tensor", id="env-tensor"),
        pytest.param([], _facts(LLAMA_ARG_SPLIT_MODE=" Row "), "split_mode", "-sm row", id="env-row-trimmed"),
        pytest.param(
            ["-ot", r"blk\.1\.attn_k.*=CUDA1"], _facts(), "override_tensor", "-ot on attention tensors", id="ot-attn"
        ),
        pytest.param(
            ["-ot", "exps=CPU", "--override-tensor=blk.2.ATTN_Q=CUDA1"],
            _facts(),
            "override_tensor",
            "-ot on attention tensors",
            id="any-ot-occurrence-any-case",
        ),
        pytest.param(
            [],
            _facts(LLAMA_ARG_OVERRIDE_TENSOR="attn_.*=CUDA0"),
            "override_tensor",
            "-ot on attention tensors",
            id="env-ot-attn",
        ),
        pytest.param(
            ["-ot", "attn=CUDA1", "-sm", "row"], _facts(), "split_mode", "-sm row", id="split-mode-checked-first"
        ),
    ],
)
def test_graph_opt_refused(place, facts, code, why):
    got, notes = graph_opt_env({"CUDA_GRAPH_OPT": "on"}, place, facts)
    assert got == ""
    assert len(notes) == 1
    assert notes[0].id == "graphopt.refused"
    assert notes[0].code == code
    assert notes[0].text == f"CUDA_GRAPH_OPT ignored: {why} can split a layer's Q, K and V across cards"


def test_qkv_split_risk_none():
    assert qkv_split_risk(["-ts", "1,1", "-ot", "ffn_.*_exps=CPU"], {}) == ""


# --- OP_OFFLOAD_MIN_BATCH ------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "value"),
    [
        pytest.param("128", "128", id="128"),
        pytest.param(" 64 ", "64", id="trimmed"),
        pytest.param("1", "1", id="lower-bound"),
        pytest.param("1048576", "1048576", id="upper-bound"),
        pytest.param("+128", "128", id="plus-sign-formatted"),
        pytest.param("0032", "32", id="leading-zeros-formatted"),
    ],
)
def test_op_offload_set(raw, value):
    got, notes = op_offload_min_batch_env({"OP_OFFLOAD_MIN_BATCH": raw}, _facts())
    assert got == value
    assert [(n.id, n.text) for n in notes] == [
        (
            "opoffload.set",
            f"GGML_OP_OFFLOAD_MIN_BATCH={value} (OP_OFFLOAD_MIN_BATCH): batches under {value} tokens "
            "computed on CPU for weights left in RAM",
        )
    ]


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        pytest.param("0", "0", id="zero"),
        pytest.param("1048577", "1048577", id="above-max"),
        pytest.param("abc", "abc", id="text"),
        pytest.param("-5", "-5", id="negative"),
        pytest.param(" 12.5 ", "12.5", id="decimal-raw-trimmed"),
        pytest.param("1e3", "1e3", id="exponent"),
        pytest.param("99999999999999999999", "99999999999999999999", id="overflow"),
    ],
)
def test_op_offload_invalid(raw, shown):
    got, notes = op_offload_min_batch_env({"OP_OFFLOAD_MIN_BATCH": raw}, _facts())
    assert got == ""
    assert [(n.id, n.text) for n in notes] == [
        ("opoffload.invalid", f"OP_OFFLOAD_MIN_BATCH={shown} ignored: a token count, e.g. 128")
    ]


@pytest.mark.parametrize(
    ("preset", "facts"),
    [
        pytest.param({}, _facts(), id="absent"),
        pytest.param({"OP_OFFLOAD_MIN_BATCH": "  "}, _facts(), id="blank"),
        pytest.param({"OP_OFFLOAD_MIN_BATCH": "128"}, _facts({"GGML_OP_OFFLOAD_MIN_BATCH": "32"}), id="user-env"),
        pytest.param({"OP_OFFLOAD_MIN_BATCH": "128"}, _facts({"GGML_OP_OFFLOAD_MIN_BATCH": "0"}), id="user-env-0"),
        pytest.param(
            {"OP_OFFLOAD_MIN_BATCH": "abc"}, _facts({"GGML_OP_OFFLOAD_MIN_BATCH": "32"}), id="user-env-beats-invalid"
        ),
    ],
)
def test_op_offload_silent(preset, facts):
    assert op_offload_min_batch_env(preset, facts) == ("", [])


@pytest.mark.parametrize(
    ("preset", "user_env", "threshold"),
    [
        pytest.param({}, {}, 32, id="engine-default"),
        pytest.param({"OP_OFFLOAD_MIN_BATCH": "128"}, {}, 128, id="preset"),
        pytest.param({"OP_OFFLOAD_MIN_BATCH": "1"}, {}, 1, id="preset-one"),
        pytest.param({"OP_OFFLOAD_MIN_BATCH": "0"}, {}, 32, id="preset-zero-ignored"),
        pytest.param({"OP_OFFLOAD_MIN_BATCH": "abc"}, {}, 32, id="preset-text-ignored"),
        pytest.param({"OP_OFFLOAD_MIN_BATCH": "1048577"}, {}, 32, id="preset-too-big-ignored"),
        pytest.param({"OP_OFFLOAD_MIN_BATCH": "128"}, {"GGML_OP_OFFLOAD_MIN_BATCH": "64"}, 64, id="env-beats-preset"),
        pytest.param({}, {"GGML_OP_OFFLOAD_MIN_BATCH": " 512 "}, 512, id="env-trimmed"),
        pytest.param({"OP_OFFLOAD_MIN_BATCH": "128"}, {"GGML_OP_OFFLOAD_MIN_BATCH": "0"}, 32, id="env-zero-default"),
        pytest.param({"OP_OFFLOAD_MIN_BATCH": "128"}, {"GGML_OP_OFFLOAD_MIN_BATCH": "abc"}, 32, id="env-text-default"),
        pytest.param({"OP_OFFLOAD_MIN_BATCH": "128"}, {"GGML_OP_OFFLOAD_MIN_BATCH": "  "}, 32, id="env-blank-default"),
    ],
)
def test_op_offload_threshold(preset, user_env, threshold):
    assert op_offload_threshold(preset, _facts(user_env)) == threshold
