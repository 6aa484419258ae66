"""Every plan the planner accepts passes the real engine's own parser (the preflight), on generated presets.

The worlds are those of the planner's property tests (tests/unit/support/strategies.py: half hostile, junk and
odd strings included; half clean), planned for the real 11434 engine of this machine: its real help text
and device list, the real binary and model. Every accepted plan is run through run_preflight with the
environment the service would have (the world's LLAMA_ARG_*/GGML_* and the plan's own variables); every
refusal must name its key or word (the unit properties' check_refusal).

One class is the engine's to decide by design: whether this build has the RPC backend (llama.cpp: "RPC not
supported in this build"); nothing in its help or device list tells. Plans that name RPC servers are
counted apart and must be refused by the preflight in the engine's words; any other refusal by the engine
of a plan the planner accepted fails the test.

Profiles as the unit properties (LLAMAFLEET_FUZZ_PROFILE=ci: 300 examples; long: 10,000, see
bench/fuzz_engine.py). With LLAMAFLEET_FUZZ_STATS=<file>, the counts are written there as JSON.
"""

from __future__ import annotations

import collections
import dataclasses
import json
import os
from pathlib import Path

import pytest
from hypothesis import given

from ansible_collections.llamafleet.llamacpp.plugins.module_utils import planner
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.argv_tokens import has_any_flag
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.engine_inputs import environment_problem
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.host_view import arg_env_from, user_env_from
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.engine import (
    binary_launcher,
    cached_devices,
    engine_env,
    read_help,
    run_preflight,
)
from tests.unit.plugins.module_utils.test_plan_properties import FUZZ, check_refusal
from tests.unit.support.strategies import worlds

STATS: collections.Counter = collections.Counter()
REJECTED: list[dict] = []
# Directories the strategies name as the user's own (EXTRA_ARGS --slot-save-path): present on this host, as
# an operator's would be. What the planner itself plans (its slot directory, its key file) gets the
# preflight's stand-ins, as on any host.
HOST_DIRECTORIES = ("/tmp/slots",)


@pytest.fixture(scope="module")
def real_host(engine_bin, model_path):
    for directory in HOST_DIRECTORIES:
        Path(directory).mkdir(parents=True, exist_ok=True)
    help_text = read_help(engine_bin, engine_env(engine_bin, {}))
    assert "--help" in help_text
    listed = cached_devices(binary_launcher(engine_bin, engine_env(engine_bin, {})), None)
    assert listed.devices is not None
    yield {"help": help_text, "bin": engine_bin, "model": model_path,
           "devices": tuple(d.id for d in listed.devices)}
    stats_file = os.environ.get("LLAMAFLEET_FUZZ_STATS", "")
    if stats_file:
        Path(stats_file).write_text(json.dumps({"counts": dict(STATS), "rejected": REJECTED[:20]}, indent=1))


def _missing_template_file(argv) -> str:
    """The --chat-template-file of a plan (CHAT_TEMPLATE's path) when no such file is on this host: the engine reads
    it while it parses its arguments, so a path the generated world names and this host lacks is refused by the
    engine's own words (as the instance step's preflight would, before anything changes)."""
    words = list(argv)
    for index, word in enumerate(words[:-1]):
        if word == "--chat-template-file" and not os.path.exists(words[index + 1]):
            return words[index + 1]
    return ""


def _names_rpc(preset, arg_env) -> bool:
    extra = planner.split_args(preset.get("EXTRA_ARGS", ""))
    return has_any_flag(extra, "--rpc") or bool(arg_env.get("LLAMA_ARG_RPC"))


@FUZZ
@given(worlds())
def test_every_accepted_plan_passes_the_real_engines_parser(real_host, world):
    preset, facts = world
    # The service environment of the world, read the way probe_host reads it.
    service_env = {**facts.arg_env, **facts.user_env}
    facts = dataclasses.replace(
        facts, help=real_host["help"], bin=real_host["bin"], model=real_host["model"],
        engine_devices=real_host["devices"], arg_env=arg_env_from(service_env),
        user_env=user_env_from(service_env),
    )
    STATS["generated"] += 1
    bad_name, _why = environment_problem(service_env)
    if bad_name:
        STATS["refused"] += 1  # probe_host refuses it, naming the variable
        return
    try:
        result = planner.plan(preset, facts)
    except planner.PlanError as err:
        check_refusal(err, preset)
        STATS["refused"] += 1
        return
    if result.external:
        STATS["external"] += 1
        return
    env = {**service_env, **result.env}
    verdict = run_preflight(
        binary_launcher(real_host["bin"], engine_env(real_host["bin"], env)),
        result.argv, result.decisions.preflight_swaps, cache_dir=None,
    )
    STATS["accepted"] += 1
    if _names_rpc(preset, facts.arg_env) and not verdict.passed:
        STATS["accepted_naming_rpc"] += 1  # this build has no RPC backend: the engine's own words refuse it
        assert "RPC not supported in this build" in verdict.engine_says, verdict.engine_says
        return
    missing = _missing_template_file(result.argv)
    if missing and not verdict.passed:
        STATS["accepted_missing_template_file"] += 1
        assert f"failed to open file '{missing}'" in verdict.engine_says, verdict.engine_says
        return
    if not verdict.passed:
        STATS["engine_rejected"] += 1
        REJECTED.append({"argv": result.argv[1:], "env": env, "engine_says": verdict.engine_says})
    assert verdict.passed, f"{verdict.engine_says}\nargv {result.argv[1:]}\nenv {env}"
