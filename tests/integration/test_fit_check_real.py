"""The engine's own estimate as a placed replica's last check, with the real llama-fit-params built next to the
real llama-server (scripts/build_engine.sh) and the real Gemma file: the planned arguments it is given are ones
it accepts, a launch that fits passes, one that does not is refused naming the device and the numbers, and our
estimate is not short of the engine's projection."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._converge.planning import (
    plan_from_params,
    with_defaults,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._converge.step import Request, engine_fit_refusal
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._judgements import fit_check
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._layout.settings import defaults
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.engine import engine_env, run_engine


@pytest.fixture
def planned(tmp_path, engine_bin, model_path):
    if not os.access(Path(engine_bin).parent / fit_check.FIT_PARAMS, os.X_OK):
        pytest.fail(f"{fit_check.FIT_PARAMS} is not next to {engine_bin}: scripts/build_engine.sh builds both")
    home = tmp_path / "home"
    home.mkdir()
    options = with_defaults({"bin": engine_bin, "home": str(home), "model_dirs": [str(Path(model_path).parent)],
                             "preset": {"MODEL": Path(model_path).name, "HOST": "127.0.0.1", "PORT": 18099,
                                        "CTX": 8192, "PARALLEL": 2, "THREADS": 1, "EXTRA_ARGS": "--alias g"},
                             "check_port": False})
    outcome = plan_from_params(options, check_mode=True)
    assert not outcome.failure, outcome.failure
    return outcome.planned


def request(engine_bin, ram_margin_mib):
    return Request(name="g-0", preset={}, settings=defaults(), engine=engine_bin,
                   placement={"deployment": "g", "replica": 0, "port": 18099, "cuda_visible_devices": "",
                              "ram_margin_mib": ram_margin_mib, "gpu_margin_mib": 1024})


def test_the_planned_arguments_are_accepted_and_a_launch_that_fits_passes(planned, engine_bin):
    assert engine_fit_refusal(request(engine_bin, 1024), planned) == ""
    tool = str(Path(engine_bin).parent / fit_check.FIT_PARAMS)
    env = engine_env(engine_bin, {})
    _status, help_text = run_engine(tool, ["--help"], env, 10)
    argv = fit_check.projection_argv(planned.plan.argv, fit_check.help_flags(help_text))
    # The server's own flags (port, address, alias) are not given to the estimator; the memory flags are.
    assert "--port" not in argv
    assert "--alias" not in argv
    assert argv[argv.index("-c") + 1] == "8192"
    status, output = run_engine(tool, argv, env, 120)
    assert status == 0, output
    rows = fit_check.parse_projection(output)
    assert list(rows) == ["Host"]
    # Our estimate (Plan.memory) is never short of the engine's projection by more than 5 %.
    assert planned.plan.memory.host_mib >= 0.95 * rows["Host"]


def test_a_launch_that_does_not_fit_is_refused_naming_the_numbers(planned, engine_bin):
    free = int(planned.facts["ram_avail_measured_mib"])
    refusal = engine_fit_refusal(request(engine_bin, free - 100), planned)
    assert refusal.startswith("the engine's own estimate (llama-fit-params) does not fit: Host: ")
    assert f"the host has {free} MiB of RAM free less {free - 100} MiB kept free" in refusal


def test_a_replica_placed_by_hand_or_without_an_estimator_is_not_asked(planned, engine_bin, tmp_path):
    hand = Request(name="main", preset={}, settings=request(engine_bin, 1024).settings, engine=engine_bin)
    assert engine_fit_refusal(hand, planned) == ""
    lone = tmp_path / "bin" / "llama-server"
    lone.parent.mkdir()
    lone.write_text("")
    assert engine_fit_refusal(request(str(lone), 10**9), planned) == ""
