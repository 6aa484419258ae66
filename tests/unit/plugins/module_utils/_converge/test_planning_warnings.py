"""The plan's warnings reach the module's ``warn`` once each (plan_from_params's ``warn``), and stay in the outcome
for the callers that read them there (the GPU check, the integration tests)."""

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._converge import planning
from ansible_collections.llamafleet.llamacpp.plugins.modules import llama_server_plan
from tests.unit.plugins.modules.test_llama_server_plan import FACTS
from tests.unit.support.module_runner import run_module

SLOW_KV = "[kv.slow] KV cache q4_0/f16 not accelerated by llama.cpp CUDA"

CASES = [
    # name, preset -> warnings (their starts)
    ("a slow KV cache pair", {"EXTRA_ARGS": "-ctk q4_0 -ctv f16"}, [SLOW_KV]),
    ("a plain plan", {"CTX": "4096"}, []),
    ("a refused preset", {"CTX": "4q"}, []),
]


@pytest.mark.parametrize("case", CASES, ids=[case[0] for case in CASES])
def test_each_warning_is_given_to_warn_once(case):
    _name, preset, starts = case
    given = []
    outcome = planning.plan_from_params(planning.with_defaults({"preset": preset, "host_facts": FACTS}), True,
                                        warn=given.append)
    assert given == outcome.warnings
    assert len(given) == len(starts)
    assert all(text.startswith(start) for text, start in zip(given, starts, strict=True))
    assert planning.plan_from_params(planning.with_defaults({"preset": preset, "host_facts": FACTS}),
                                     True).warnings == outcome.warnings


def test_the_module_warns(capsys, monkeypatch):
    # AnsibleModule.warn itself, recorded: where the warning goes from there is ansible-core's (into the result on a
    # target, to the display once controller code has been imported, as other tests of this run do).
    warned = []
    monkeypatch.setattr(llama_server_plan.AnsibleModule, "warn", lambda module, text, **more: warned.append(text))
    result = run_module(llama_server_plan.main, {"preset": {"EXTRA_ARGS": "-ctk q4_0 -ctv f16"}, "host_facts": FACTS},
                        capsys, check_mode=True)
    assert [text[:len(SLOW_KV)] for text in warned] == [SLOW_KV]
    assert "failed" not in result
