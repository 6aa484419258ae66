"""A router instance's change: nothing, a reload of the models the running router reads otherwise, or a restart.

On the REAL capture of tests/unit/fixtures/engine/router (the 11434 router's /v1/models with g1 and g2 loaded) and
the captured help of the same engine.
"""

from __future__ import annotations

import dataclasses
import json

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._judgements.router_change import router_change
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._judgements.router_models import read_router_models
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.flag_table import read_flag_table
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._render.router_presets import parse_models_file
from tests.unit.support.paths import FIXTURES

ROUTER = FIXTURES / "engine" / "router"
TABLE = read_flag_table((FIXTURES / "engine" / "llama-server-11434.0.0-cpu.help.txt").read_text())
LISTED = read_router_models(json.loads((ROUTER / "llama-server-11434.0.0-cpu.router-v1-models.json").read_text()))
WRITTEN = {name: list(options.items()) for name, options in
           parse_models_file((ROUTER / "llama-server-11434.0.0-cpu.router-models.ini").read_text()).items()
           if name != "default"}  # the file's "version = 1" line, which the engine skips


def with_option(name: str, key: str, value: str) -> dict:
    planned = {model: list(options) for model, options in WRITTEN.items()}
    planned[name] = [(k, value if k == key else v) for k, v in planned[name]]
    return planned


@pytest.mark.parametrize(("restart", "planned", "listed", "reload", "current"), [
    pytest.param([], WRITTEN, LISTED, (), True, id="the-router-runs-its-plan"),
    pytest.param([], with_option("g2", "ctx-size", "4096"), LISTED, ("g2",), False, id="one-model-changed"),
    pytest.param([], with_option("g3", "ctx-size", "64"), LISTED, ("g3",), False, id="an-unloaded-model-changed"),
    pytest.param([], {**WRITTEN, "g4": WRITTEN["g3"]}, LISTED, ("g4",), False, id="a-model-added"),
    pytest.param([], {k: v for k, v in WRITTEN.items() if k != "g1"}, LISTED, ("g1",), False,
                 id="a-model-removed"),
    pytest.param([], WRITTEN, None, ("g1", "g2", "g3"), False, id="no-model-list"),
    pytest.param(["the running engine's command line is not the plan's"], with_option("g2", "ctx-size", "1"), LISTED,
                 (), False, id="a-restart-reads-everything"),
    pytest.param([], WRITTEN, {**LISTED, "g1": dataclasses.replace(LISTED["g1"], failed=True, exit_code=1)}, (),
                 True, id="a-failed-child-is-no-reason-to-reload"),
])
def test_router_change(restart, planned, listed, reload, current):
    change = router_change(restart, planned, listed, TABLE)
    assert change.reload == reload
    assert change.current is current
    assert bool(change.restart_reasons) is bool(restart)
    assert len(change.reload_reasons) == (1 if listed is None else len(reload))


def test_each_reload_says_why():
    change = router_change([], with_option("g2", "ctx-size", "4096"), LISTED, TABLE)
    assert change.reload_reasons == ("g2: -c: planned '4096', the engine read '768'",)
    removed = router_change([], {"g2": WRITTEN["g2"]}, LISTED, TABLE)
    assert removed.reload == ("g1", "g3")
    assert removed.reload_reasons[0] == "g1: the router still serves it, and it is no longer planned"
