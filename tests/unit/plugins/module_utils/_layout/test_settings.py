"""The settings table (_layout/settings.py) is the one declaration of the settings every instance depends on:
the role's defaults, its argument specs, the mapping it passes to the actions, and the doc fragment all follow it."""

from pathlib import Path

import pytest
import yaml

from ansible_collections.llamafleet.llamacpp.plugins.doc_fragments.instance_settings import ModuleDocFragment
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._inputs.grammar import number_text
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._layout.settings import (
    SETTINGS,
    defaults,
    settings_spec,
)

ROLE = Path(__file__).resolve().parents[5] / "roles" / "llama_server"
ROLE_DEFAULTS = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())
ROLE_SPECS = yaml.safe_load((ROLE / "meta" / "argument_specs.yml").read_text())["argument_specs"]["main"]["options"]
ROLE_VARS = yaml.safe_load((ROLE / "vars" / "main.yml").read_text())
FRAGMENT = yaml.safe_load(ModuleDocFragment.DOCUMENTATION)["options"]["settings"]


def _plain(value):
    return list(value) if isinstance(value, tuple) else value


@pytest.mark.parametrize("setting", SETTINGS, ids=[s.name for s in SETTINGS])
def test_the_role_default_is_the_tables(setting):
    want = setting.role_default if setting.role_default is not None else _plain(setting.default)
    assert ROLE_DEFAULTS[setting.role_variable] == want


@pytest.mark.parametrize("setting", SETTINGS, ids=[s.name for s in SETTINGS])
def test_the_role_argument_spec_is_the_tables(setting):
    spec = ROLE_SPECS[setting.role_variable]
    want = setting.role_default if setting.role_default is not None else _plain(setting.default)
    assert (spec["type"], spec.get("default"), spec.get("elements", ""), tuple(spec.get("choices", ()))) == (
        setting.type, want, setting.elements, setting.choices)


def test_a_derived_role_default_renders_to_the_tables_default():
    for setting in (s for s in SETTINGS if s.role_default is not None):
        source = setting.role_default.removeprefix("{{ ").split(" }}")[0]
        rest = setting.role_default.split(" }}", 1)[1]
        assert BY_ROLE_VARIABLE[source].default + rest == setting.default, setting.name


BY_ROLE_VARIABLE = {s.role_variable: s for s in SETTINGS}


def test_the_role_passes_every_setting_by_its_variable():
    assert ROLE_VARS["_llama_server_settings"] == {s.name: f"{{{{ {s.role_variable} }}}}" for s in SETTINGS}


def test_the_doc_fragment_is_the_table():
    suboptions = FRAGMENT["suboptions"]
    assert list(suboptions) == [s.name for s in SETTINGS]
    for setting in SETTINGS:
        doc = suboptions[setting.name]
        assert (doc["type"], doc.get("default"), doc.get("elements", ""), tuple(doc.get("choices", ()))) == (
            setting.type, _plain(setting.default), setting.elements, setting.choices), setting.name


def _text(description) -> str:
    text = " ".join(description) if isinstance(description, list) else description
    return " ".join(text.split())


@pytest.mark.parametrize("setting", [s for s in SETTINGS if s.bounds], ids=[s.name for s in SETTINGS if s.bounds])
def test_the_docs_give_a_numbers_range(setting):
    said = f"From {number_text(setting.bounds[0])} to {number_text(setting.bounds[1])}."
    assert said in _text(FRAGMENT["suboptions"][setting.name]["description"])
    assert said in _text(ROLE_SPECS[setting.role_variable]["description"])


def test_the_spec_hands_out_fresh_defaults():
    first, second = settings_spec(), settings_spec()
    first["options"]["environment"]["default"]["X"] = "1"
    assert second["options"]["environment"]["default"] == {}
    assert defaults()["compose_health_command"][0] == "curl"
