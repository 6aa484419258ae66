"""The context and micro-batch the engine will open (spec sections 1.6, 8.3)."""

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner import context_size as rule
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.facts import GGUFInfo


@pytest.mark.parametrize(
    ("preset", "extra", "text", "fixed"),
    [
        pytest.param({}, [], "32768", True, id="default"),
        pytest.param({"CTX": " 8192 "}, [], "8192", True, id="trimmed"),
        pytest.param({"CTX": "8192"}, ["-c", "0"], "0", False, id="extra-zero"),
        pytest.param({"CTX": "0"}, [], "0", False, id="zero"),
        pytest.param({"CTX": "-5"}, [], "-5", False, id="negative"),
        pytest.param({"CTX": "32k"}, [], "32k", False, id="text"),
        pytest.param({}, ["--ctx-size=4096"], "4096", True, id="extra-long"),
    ],
)
def test_ctx_fixed(preset, extra, text, fixed):
    assert rule.ctx_fixed(preset, extra) == (text, fixed)


@pytest.mark.parametrize(
    ("preset", "extra", "gguf", "ctx"),
    [
        pytest.param({}, [], None, 32768, id="default"),
        pytest.param({"CTX": "0"}, [], GGUFInfo(context_length=131072), 131072, id="zero-training"),
        pytest.param({"CTX": "0"}, [], None, 0, id="zero-unknown"),
        pytest.param({"CTX": "abc"}, [], GGUFInfo(context_length=8), 0, id="text"),
        pytest.param({"CTX": "-1"}, [], None, 0, id="negative"),
        pytest.param({"CTX": "100"}, ["-c", "200"], None, 200, id="extra-wins"),
    ],
)
def test_serve_ctx(preset, extra, gguf, ctx):
    assert rule.serve_ctx(preset, extra, gguf) == ctx


@pytest.mark.parametrize(
    ("preset", "extra", "ub"),
    [({}, [], 512), ({"UBATCH": "2048"}, [], 2048), ({"UBATCH": "1"}, ["-ub", "4096"], 4096),
     ({}, ["--ubatch-size=x"], 0), ({"UBATCH": "-3"}, [], 0)],
)
def test_serve_ubatch(preset, extra, ub):
    assert rule.serve_ubatch(preset, extra) == ub
