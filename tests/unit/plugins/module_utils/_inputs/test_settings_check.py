"""The settings against their forms and ranges (settings_check.py): every setting with a form or a range is tried
with hostile values, each refused with its role variable, the value and the accepted form."""

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._gateway.settings import gateway_settings
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._inputs.settings_check import (
    setting_problem,
    settings_errors,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._layout.settings import BY_NAME, SETTINGS, defaults

# Values no setting of each form may take.
HOSTILE = {
    "path": ["relative/dir", "/var/lib/llamafleet\rExecStartPre=+/bin/sh -c id\r#", "/a b", "/a\\", "/a/../b",
             "/a\n", "/a/", "/x\udcff", "/ok;rm"],
    "path or empty": ["relative", "/a b", "/a\n"],
    "account": ["root\\", "llama\n", "a b", "", "1x", "a$", "%Z"],
    "project": ["Fleet", "-x", "a b", "x\n", ""],
    "word or empty": ["a b", "a\r", "a\n"],
    "command": [[], [""], ["a b"], ["/a/../b"], ["curl", "x\0"], ["curl", "\udcff"]],
    "auto or switch": ["ture", "gpu", "", "2", ["auto"]],
    "environment": [{"1X": "v"}, {"A B": "v"}, {"X\n": "v"}, {"LLAMA_API_KEY": "k"}, {"HF_TOKEN": "t"},
                    {"LLAMA_ARG_API_KEY_FILE": "/etc/shadow"}, {"X": "v\0"}, {"X": "\udcff"}, "not a mapping"],
}
CASES = [(setting.name, value) for setting in SETTINGS if setting.form for value in HOSTILE[setting.form]]
CASES += [(setting.name, value) for setting in SETTINGS if setting.bounds
          for value in (setting.bounds[0] - 1, setting.bounds[1] + 1, "5", True)]


def test_every_default_passes():
    assert settings_errors(defaults()) == []


def test_every_setting_with_a_form_or_range_is_tried():
    assert {name for name, _value in CASES} == {s.name for s in SETTINGS if s.form or s.bounds}
    assert len(CASES) > 100


@pytest.mark.parametrize(("name", "value"), CASES, ids=[f"{n}-{i}" for i, (n, _v) in enumerate(CASES)])
def test_a_hostile_value_is_refused_naming_the_setting(name, value):
    problem = setting_problem(BY_NAME[name], value)
    assert problem.startswith(f"llama_server_{name} (settings.{name}) ")
    assert "; accepted: " in problem


def test_the_limits_are_the_ones_systemd_needs():
    assert "outside 1 to 3600" in setting_problem(BY_NAME["stop_timeout_s"], 0)  # TimeoutStopSec=0: no timeout
    assert "outside 1024 to 1048576; accepted: a number from 1024 to 1048576" in setting_problem(
        BY_NAME["limit_nofile"], 0)


def test_an_environment_value_is_never_shown():
    problem = setting_problem(BY_NAME["environment"], {"LLAMA_API_KEY": "s3cret-value"})
    assert "s3cret-value" not in problem
    assert "LLAMA_API_KEY names a key or a token" in problem


def test_only_the_settings_given_are_checked():
    assert settings_errors({"home": "/a b"}) == [
        "llama_server_home (settings.home) = '/a b': it holds ' '; accepted: an absolute, normalised path (no //, "
        ". or .. parts, no trailing /) of letters, digits and / . _ + @ ~ , : = % - (no blanks, quotes, "
        "backslashes or control characters)"]


def test_both_roles_say_a_form_in_the_same_words():
    instance = setting_problem(BY_NAME["docker_config"], "relative")
    _settings, errors = gateway_settings({"allow_open": True, "tls_certificate": "relative"})
    assert "; accepted: empty, or an absolute, normalised path" in instance
    assert errors[0].startswith("llama_gateway_tls_certificate='relative' is not valid: expected empty, or an absolute")
