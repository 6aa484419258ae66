"""METRICS and the plan's metrics decision: --metrics added once, refused where the engine lacks it."""

from __future__ import annotations

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.errors import PlanError
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.flag_table import read_flag_table
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.metrics import (
    metrics_args,
    metrics_served,
    metrics_set_by_hand,
)
from tests.unit.support.paths import FIXTURES

REAL_TABLE = read_flag_table((FIXTURES / "engine" / "llama-server-11434.0.0-cpu.help.txt").read_text())
# A known engine without the flag: a help text that lists other flags only.
NO_METRICS_TABLE = read_flag_table("-c,    --ctx-size N    size of the prompt context\n"
                                   "--port PORT             port to listen\n")
UNKNOWN_TABLE = read_flag_table("")


@pytest.mark.parametrize(
    ("preset", "extra", "env", "table", "expected"),
    [
        pytest.param({}, [], {}, REAL_TABLE, ([], []), id="absent"),
        pytest.param({"METRICS": ""}, [], {}, REAL_TABLE, ([], []), id="empty-is-off"),
        pytest.param({"METRICS": "off"}, [], {}, REAL_TABLE, ([], []), id="off"),
        pytest.param({"METRICS": "on"}, [], {}, REAL_TABLE, (["--metrics"], [""]), id="on"),
        pytest.param({"METRICS": "on"}, [], {}, UNKNOWN_TABLE, (["--metrics"], [""]), id="on-unknown-engine"),
        pytest.param({"METRICS": "on"}, ["--metrics"], {}, REAL_TABLE, ([], ["by_hand"]), id="on-and-in-extra"),
        pytest.param({"METRICS": "on"}, [], {"LLAMA_ARG_ENDPOINT_METRICS": "1"}, REAL_TABLE, ([], ["by_hand"]),
                     id="on-and-env-true"),
        pytest.param({"METRICS": "on"}, [], {"LLAMA_ARG_ENDPOINT_METRICS": "false"}, REAL_TABLE,
                     (["--metrics"], [""]), id="on-env-false-does-not-count"),
        pytest.param({"METRICS": "off"}, ["--metrics"], {}, REAL_TABLE, ([], []), id="off-extra-still-wins"),
    ],
)
def test_metrics_args(preset, extra, env, table, expected):
    """expected: (the flags added, the codes of the notes)."""
    got_flags, notes = metrics_args(preset, extra, env, table)
    assert (got_flags, [note.code for note in notes]) == expected
    assert all(note.id == "metrics.on" for note in notes)


def test_a_known_engine_without_the_flag_is_refused_naming_the_key():
    with pytest.raises(PlanError) as err:
        metrics_args({"METRICS": "on"}, [], {}, NO_METRICS_TABLE)
    assert err.value.key == "METRICS"
    assert "--metrics" in str(err.value)


@pytest.mark.parametrize(
    ("argv", "env", "served"),
    [
        pytest.param(["/bin/llama-server", "-m", "m.gguf"], {}, False, id="plain"),
        pytest.param(["/bin/llama-server", "-m", "m.gguf", "--metrics"], {}, True, id="flag"),
        pytest.param(["/bin/llama-server", "-m", "m.gguf"], {"LLAMA_ARG_ENDPOINT_METRICS": "on"}, True, id="env-on"),
        pytest.param(["/bin/llama-server"], {"LLAMA_ARG_ENDPOINT_METRICS": "enabled"}, True, id="env-enabled"),
        # llama.cpp reads exactly these words as true; anything else leaves the endpoint off.
        pytest.param(["/bin/llama-server"], {"LLAMA_ARG_ENDPOINT_METRICS": "yes"}, False, id="env-yes-not-read"),
        pytest.param(["/bin/llama-server"], {"LLAMA_ARG_ENDPOINT_METRICS": "0"}, False, id="env-off"),
        # The binary's own path is no flag.
        pytest.param(["--metrics"], {}, False, id="binary-named-like-the-flag"),
    ],
)
def test_metrics_served(argv, env, served):
    assert metrics_served(argv, env) is served


@pytest.mark.parametrize(
    ("extra", "env", "by_hand"),
    [
        ([], {}, False),
        (["--metrics"], {}, True),
        (["--metrics=1"], {}, True),
        ([], {"LLAMA_ARG_ENDPOINT_METRICS": "true"}, True),
        ([], {"LLAMA_ARG_ENDPOINT_METRICS": "off"}, False),
    ],
)
def test_metrics_set_by_hand(extra, env, by_hand):
    assert metrics_set_by_hand(extra, env) is by_hand
