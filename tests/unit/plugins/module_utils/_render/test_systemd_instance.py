"""An instance's files from its plan (systemd_instance.py): credentials, removals, environment, timeouts."""

import dataclasses

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._layout.paths import paths_of
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._layout.settings import defaults
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.planned import Planned
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._render.systemd_instance import (
    render_instance,
    uses_nvidia,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils.planner import Decisions, Plan

SETTINGS = defaults()
PATHS = paths_of("main", SETTINGS)


def planned(unset=(), gpus=(), **change) -> Planned:
    plan = Plan(argv=["/e/llama-server", "-m", "/m/a.gguf", "--port", "8080"], env={"CUDA_VISIBLE_DEVICES": "1"})
    return Planned(dataclasses.replace(plan, **change), facts={"gpus": list(gpus)}, unset_environment=tuple(unset))


@pytest.mark.parametrize(
    ("has_key", "via_env", "written", "removed", "unit_line"),
    [
        (False, False, [], [PATHS.key_file, PATHS.env_file], None),
        (True, False, [PATHS.key_file], [PATHS.env_file], f"LoadCredential=api_key:{PATHS.key_file}"),
        (True, True, [PATHS.key_file, PATHS.env_file], [], f"EnvironmentFile={PATHS.env_file}"),
    ],
)
def test_credentials_follow_the_plan(has_key, via_env, written, removed, unit_line):
    got = render_instance("main", planned(api_key_via_env=via_env), SETTINGS, {}, has_key)
    assert [path for path, _label, _holds in got.credentials] == written
    assert list(got.remove) == removed
    if unit_line:
        assert unit_line in got.unit_content.splitlines()
    assert "LoadCredential=" not in got.unit_content or has_key


def test_the_plans_variables_win_over_the_users():
    got = render_instance("main", planned(), SETTINGS, {"CUDA_VISIBLE_DEVICES": "0", "OTHER": None}, False)
    assert got.environment["CUDA_VISIBLE_DEVICES"] == "1"
    assert got.environment["OTHER"] == ""
    assert got.environment["XDG_CONFIG_HOME"] == "/tmp/llamafleet-no-config"


@pytest.mark.parametrize(
    ("setting", "gpus", "nvidia"),
    [("auto", [], False), ("auto", [{"index": 0}], True), ("true", [], True), ("no", [{"index": 0}], False)],
)
def test_nvidia_device_rules(setting, gpus, nvidia):
    assert uses_nvidia(planned(gpus=gpus), setting) is nvidia


def test_decisions_reach_the_unit():
    decisions = Decisions(slot_dir="/s", slot_persist=True, loopback_only=True)
    got = render_instance("main", planned(decisions=decisions, unset=["LLAMA_ARG_X"]), SETTINGS, {}, False)
    text = got.unit_content
    assert "IPAddressDeny=any" in text
    assert " llamafleet-slots /s 1" in text
    assert "UnsetEnvironment=LLAMA_ARG_X" in text
