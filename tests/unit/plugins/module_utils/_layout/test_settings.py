"""The settings tables (_layout/settings.py for llama_server, _gateway/settings.py for llama_gateway), one machinery:
each row holds together, and the argument spec is built from it. The files written from the tables (defaults,
argument specs, variable mappings, doc fragments) are held to them by tests/unit/test_generated_settings.py."""

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._gateway.settings import (
    GATEWAY_SETTINGS,
    module_settings_spec,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._inputs.grammar import number_text
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._layout.settings import (
    SETTINGS,
    defaults,
    paragraphs,
    settings_spec,
)

EVERY = SETTINGS + GATEWAY_SETTINGS
BY_ROLE_VARIABLE = {s.role_variable: s for s in EVERY}


def test_each_table_declares_its_role_prefix():
    assert {s.role_prefix for s in SETTINGS} == {"llama_server_"}
    assert {s.role_prefix for s in GATEWAY_SETTINGS} == {"llama_gateway_"}
    assert len(BY_ROLE_VARIABLE) == len(EVERY)


@pytest.mark.parametrize("setting", EVERY, ids=[s.role_variable for s in EVERY])
def test_every_setting_is_documented(setting):
    assert all(text.strip() for text in paragraphs(setting.doc))
    assert all(text == " ".join(text.split()) for text in paragraphs(setting.doc) + paragraphs(setting.role_doc))


def test_a_derived_role_default_renders_to_the_tables_default():
    for setting in (s for s in EVERY if s.role_default is not None):
        source = setting.role_default.removeprefix("{{ ").split(" }}")[0]
        rest = setting.role_default.split(" }}", 1)[1]
        assert BY_ROLE_VARIABLE[source].default + rest == setting.default, setting.name


BOUNDED = [s for s in EVERY if s.bounds]


@pytest.mark.parametrize("setting", BOUNDED, ids=[s.role_variable for s in BOUNDED])
def test_the_docs_give_a_numbers_range(setting):
    said = f"From {number_text(setting.bounds[0])} to {number_text(setting.bounds[1])}."
    assert said in " ".join(paragraphs(setting.doc))
    assert said in " ".join(paragraphs(setting.role_doc or setting.doc))


def test_a_secret_is_an_option_of_its_own():
    assert [s.name for s in EVERY if s.secret] == ["api_keys"]
    assert "api_keys" not in module_settings_spec()["options"]
    assert list(module_settings_spec()["options"]) == [s.name for s in GATEWAY_SETTINGS if not s.secret]


def test_the_spec_hands_out_fresh_defaults():
    first, second = settings_spec(), settings_spec()
    first["options"]["environment"]["default"]["X"] = "1"
    assert second["options"]["environment"]["default"] == {}
    assert defaults()["compose_health_command"][0] == "curl"
    assert defaults(GATEWAY_SETTINGS)["api_keys"] == []
