"""The gateway's settings table (_gateway/settings.py) is the one declaration: the role's defaults, argument specs
and variable mapping, and the module's doc fragment follow it."""

from pathlib import Path

import pytest
import yaml

from ansible_collections.llamafleet.llamacpp.plugins.doc_fragments.gateway_settings import ModuleDocFragment
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._gateway.settings import (
    GATEWAY_SETTINGS,
    module_settings_spec,
)

ROLE = Path(__file__).resolve().parents[5] / "roles" / "llama_gateway"
DEFAULTS = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())
SPECS = yaml.safe_load((ROLE / "meta" / "argument_specs.yml").read_text())["argument_specs"]["main"]["options"]
VARS = yaml.safe_load((ROLE / "vars" / "main.yml").read_text())
FRAGMENT = yaml.safe_load(ModuleDocFragment.DOCUMENTATION)["options"]["settings"]["suboptions"]
IDS = [setting.name for setting in GATEWAY_SETTINGS]


def _plain(value):
    return list(value) if isinstance(value, tuple) else value


def _text(description) -> str:
    return " ".join(" ".join(description if isinstance(description, list) else [description]).split())


@pytest.mark.parametrize("setting", GATEWAY_SETTINGS, ids=IDS)
def test_role_default_and_spec(setting):
    assert DEFAULTS[setting.role_variable] == _plain(setting.default)
    spec = SPECS[setting.role_variable]
    expected = (setting.type, _plain(setting.default), setting.secret)
    assert (spec["type"], spec["default"], spec.get("no_log", False)) == expected
    assert _text(spec["description"]) == " ".join(setting.doc.split())


@pytest.mark.parametrize("setting", [s for s in GATEWAY_SETTINGS if s.name != "api_keys"],
                         ids=[name for name in IDS if name != "api_keys"])
def test_fragment(setting):
    doc = FRAGMENT[setting.name]
    assert (doc["type"], doc["default"]) == (setting.type, _plain(setting.default))
    assert _text(doc["description"]) == " ".join(setting.doc.split())


def test_the_role_passes_every_setting_but_the_keys_by_its_variable():
    assert VARS["_llama_gateway_settings"] == {s.name: f"{{{{ {s.role_variable} }}}}" for s in GATEWAY_SETTINGS
                                               if s.name != "api_keys"}
    assert list(FRAGMENT) == list(module_settings_spec()["options"])


BOUNDED = [setting for setting in GATEWAY_SETTINGS if setting.bounds]


@pytest.mark.parametrize("setting", BOUNDED, ids=[setting.name for setting in BOUNDED])
def test_numbers_say_their_range(setting):
    assert f"From {setting.bounds[0]} to {setting.bounds[1]}." in setting.doc
