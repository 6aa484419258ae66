"""The lookup role_settings: a role's settings mapping, read from its table, each variable templated as a task's
argument would be."""

import pytest
import yaml
from ansible.errors import AnsibleLookupError

from ansible_collections.llamafleet.llamacpp.plugins.lookup.role_settings import LookupModule
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._gateway.settings import GATEWAY_SETTINGS
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._layout.settings import SETTINGS
from tests.unit.support.host_vars import host_variables


def _variables(tmp_path, table, **overrides):
    """Every setting's role variable at its role default, as the role's defaults file gives them, then overrides."""
    values = {setting.role_variable: setting.role_default for setting in table}
    values.update(overrides)
    variables, templar, loader = host_variables(tmp_path, yaml.safe_dump(values))
    return LookupModule(loader=loader, templar=templar), variables


@pytest.mark.parametrize(("role", "table"), [("llama_server", SETTINGS), ("llama_gateway", GATEWAY_SETTINGS)])
def test_every_setting_but_the_secrets_by_name(tmp_path, role, table):
    lookup, variables = _variables(tmp_path, table)
    (found,) = lookup.run([role], variables)
    assert list(found) == [setting.name for setting in table if not setting.secret]
    assert all(setting.name not in found for setting in table if setting.secret)


def test_each_variable_is_templated(tmp_path):
    lookup, variables = _variables(tmp_path, SETTINGS, llama_server_home="/srv/llm",
                                   llama_server_models_dir="{{ llama_server_home }}/models")
    (found,) = lookup.run(["llama_server"], variables)
    assert found["home"] == "/srv/llm"
    assert found["models_dir"] == "/srv/llm/models"


def test_the_gateways_keys_are_not_read(tmp_path):
    (secret,) = [setting for setting in GATEWAY_SETTINGS if setting.secret]
    lookup, variables = _variables(tmp_path, GATEWAY_SETTINGS)
    variables[secret.role_variable] = "{{ undefined_vault_variable }}"  # never templated
    assert secret.name not in lookup.run(["llama_gateway"], variables)[0]


def test_refusals(tmp_path):
    lookup, variables = _variables(tmp_path, SETTINGS)
    with pytest.raises(AnsibleLookupError, match="'other' is not one of llama_server, llama_gateway"):
        lookup.run(["other"], variables)
    del variables["llama_server_home"]
    with pytest.raises(AnsibleLookupError, match="llama_server_home is not defined"):
        lookup.run(["llama_server"], variables)
