"""engine_inputs: which variables are the engine's, which the manager's must go, what show-environment says."""

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.engine_inputs import (
    environment_problem,
    is_engine_variable,
    names_to_unset,
    parse_show_environment,
)


@pytest.mark.parametrize(
    ("name", "engine"),
    [("LLAMA_ARG_CTX_SIZE", True), ("GGML_CUDA_GRAPH_OPT", True), ("CUDA_VISIBLE_DEVICES", True),
     ("CUDA_MODULE_LOADING", True), ("LLAMA_API_KEY", False), ("LLAMA_CACHE", False), ("PATH", False),
     ("HOME", False), ("XDG_CONFIG_HOME", False)],
)
def test_is_engine_variable(name, engine):
    assert is_engine_variable(name) is engine


def test_names_to_unset_keeps_what_the_plan_sets():
    manager = {"PATH": "/bin", "LLAMA_ARG_N_PARALLEL": "3", "GGML_X": "1", "LLAMA_API_KEY": "k", "CUDA_A": "1"}
    assert names_to_unset(manager, ["GGML_X"]) == ["CUDA_A", "LLAMA_API_KEY", "LLAMA_ARG_N_PARALLEL"]
    assert names_to_unset(manager, ["LLAMA_API_KEY", "CUDA_A", "GGML_X", "LLAMA_ARG_N_PARALLEL"]) == []
    assert names_to_unset({}, []) == []


def test_parse_show_environment():
    text = "LANG=C.UTF-8\nPATH=/usr/local/bin:/usr/bin\nLLAMA_ARG_X=a=b\nbad line\n=x\n1A=2\nMSG=$'a\\nb'\n"
    assert parse_show_environment(text) == {
        "LANG": "C.UTF-8", "PATH": "/usr/local/bin:/usr/bin", "LLAMA_ARG_X": "a=b", "MSG": "$'a\\nb'",
    }


@pytest.mark.parametrize(
    ("env", "name", "why"),
    [
        ({"PATH": "/bin", "LLAMA_ARG_THREADS": "4", "LLAMA_ARG_NO_MMAP": ""}, "", ""),
        ({"A-B": "1"}, "A-B", "is not a variable name"),
        ({"1X": "1"}, "1X", "is not a variable name"),
        ({"ÉTÉ": "1"}, "ÉTÉ", "is not a variable name"),
        ({"NOTE": "a\x00b"}, "NOTE", "holds a NUL character"),
        ({"LLAMA_ARG_OVERRIDE_TENSOR": ""}, "LLAMA_ARG_OVERRIDE_TENSOR", "is set to nothing"),
        ({"LLAMA_ARG_CTX_SIZE": "  "}, "LLAMA_ARG_CTX_SIZE", "is set to nothing"),
    ],
)
def test_environment_problem(env, name, why):
    found_name, found_why = environment_problem(env)
    assert found_name == name
    assert found_why.startswith(why)
