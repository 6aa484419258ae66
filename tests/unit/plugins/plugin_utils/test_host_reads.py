"""plugin_utils/host_reads.py: hostvars read once per host within one plugin call."""

from collections.abc import Mapping
from unittest import mock

import pytest
from ansible.inventory.manager import InventoryManager
from ansible.parsing import vault
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar
from ansible.vars.hostvars import HostVars
from ansible.vars.manager import VariableManager

from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils import host_reads
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils.host_reads import HostReads, read_once


class CountingHostvars(Mapping):
    """hostvars as Ansible's behave for these reads: an unknown host gives a falsy value, not a KeyError."""

    def __init__(self, hosts):
        self.hosts = hosts
        self.reads = []

    def __getitem__(self, name):
        self.reads.append(name)
        return dict(self.hosts[name]) if name in self.hosts else None

    def __iter__(self):
        return iter(self.hosts)

    def __len__(self):
        return len(self.hosts)


HOSTS = {"a": {"x": 1}, "b": {"x": 2}}


@pytest.mark.parametrize(("asked", "values", "reads"), [
    (["a", "a", "b", "a"], [{"x": 1}, {"x": 1}, {"x": 2}, {"x": 1}], ["a", "b"]),
    (["zz", "zz"], [None, None], ["zz"]),  # an unknown host's value is kept as hostvars gives it
    ([], [], []),
])
def test_each_host_is_read_once(asked, values, reads):
    hostvars = CountingHostvars(HOSTS)
    wrapped = read_once(hostvars)
    assert [wrapped.get(name) for name in asked] == values
    assert hostvars.reads == reads


def test_a_key_error_is_not_kept():
    hostvars = {"a": {"x": 1}}
    wrapped = HostReads(hostvars)
    assert wrapped.get("b", "none") == "none"
    hostvars["b"] = {"x": 2}
    assert wrapped["b"] == {"x": 2}


@pytest.mark.parametrize("value", ["", None, [], "not hostvars"])
def test_what_is_not_a_mapping_stays_as_it_is(value):
    assert read_once(value) is value


def test_it_is_the_mapping_it_wraps():
    wrapped = read_once(CountingHostvars(HOSTS))
    assert read_once(wrapped) is wrapped
    assert sorted(wrapped) == ["a", "b"]
    assert len(wrapped) == 2
    assert "a" in wrapped
    assert "c" not in read_once({"a": {}})


# ---------------------------------------------------------------- Ansible's own hostvars, read more cheaply
GROUP_VARS = """
key: secret-key-01
presets:
  small: {model: small.gguf, ctx: 2048, parallel: 4, extra_args: "--alias small"}
  big: {model: big.gguf, ctx: 8192, threads: 2}
instances:
  - {name: main, preset: small, host: "{{ ansible_host }}", port: 8080, api_key: "{{ key }}"}
  - {name: other, preset: big, host: "{{ ansible_host }}", port: 8081, note: !unsafe "{{ key }}"}
address: "{{ ansible_host }}:{{ http_port | default(80) }}"
whole: "{{ instances }}"
plain: [1, true, null, 2.5, {a: b}]
vaulted: !vault |
"""
VAULT_PASSWORD = b"not-a-real-password"


@pytest.fixture(name="real_hostvars")
def fixture_real_hostvars(tmp_path, monkeypatch):
    """Ansible's hostvars over an inventory of two hosts and a group_vars file (one value inline-vaulted), with the
    vault's secret known as the command line makes it known."""
    secrets = [("default", vault.VaultSecret(VAULT_PASSWORD))]
    if hasattr(vault, "VaultSecretsContext"):  # ansible-core 2.19 and later decrypt with the run's secrets
        monkeypatch.setattr(vault.VaultSecretsContext, "_current", vault.VaultSecretsContext(secrets))
    return lambda: hostvars_of(tmp_path, secrets)


def hostvars_of(tmp_path, secrets):

    ciphertext = vault.VaultLib(secrets).encrypt(b"vaulted-secret").decode()
    (tmp_path / "group_vars").mkdir()
    (tmp_path / "group_vars" / "all.yml").write_text(
        GROUP_VARS + "".join(f"  {line}\n" for line in ciphertext.splitlines()))
    (tmp_path / "hosts.ini").write_text("h1 ansible_host=10.0.0.1 http_port=81\nh2 ansible_host=10.0.0.2\n")
    loader = DataLoader()
    loader.set_vault_secrets(secrets)
    inventory = InventoryManager(loader=loader, sources=[str(tmp_path / "hosts.ini")])
    variables = VariableManager(loader=loader, inventory=inventory)
    return HostVars(inventory=inventory, variable_manager=variables, loader=loader)


@pytest.mark.parametrize("name", ["key", "presets", "instances", "address", "whole", "plain", "vaulted",
                                  "ansible_host", "inventory_hostname"])
def test_each_variable_reads_as_hostvars_gives_it(real_hostvars, name):
    hostvars = real_hostvars()
    wrapped = read_once(hostvars)
    for host in ("h1", "h2"):
        assert wrapped[host][name] == hostvars[host][name], (host, name)
        assert wrapped[host].get(name) == hostvars[host].get(name)
    assert wrapped["h1"]["vaulted"] == "vaulted-secret" if name == "vaulted" else True
    assert name in wrapped["h1"]
    assert set(wrapped["h1"]) == set(hostvars["h1"])
    assert len(wrapped["h1"]) == len(hostvars["h1"])


def test_the_templated_values(real_hostvars):
    wrapped = read_once(real_hostvars())
    assert wrapped["h1"]["address"] == "10.0.0.1:81"
    assert wrapped["h2"]["address"] == "10.0.0.2:80"
    main, other = wrapped["h2"]["instances"]
    assert (main["host"], main["api_key"], other["note"]) == ("10.0.0.2", "secret-key-01", "{{ key }}")
    assert wrapped["h2"]["whole"] == wrapped["h2"]["instances"]
    # Each read is a value of its own: changing one changes no other read.
    main["host"] = "changed"
    assert wrapped["h2"]["instances"][0]["host"] == "10.0.0.2"


def _outcome(read):
    """What a read gives: the type of its value, or of what it raised."""
    try:
        return type(read())
    except Exception as err:  # pylint: disable=broad-except
        return type(err)


def test_an_unknown_host_reads_as_hostvars_gives_it(real_hostvars):
    hostvars = real_hostvars()
    found = _outcome(lambda: read_once(hostvars)["nowhere"])
    assert found == _outcome(lambda: hostvars["nowhere"])
    assert not issubclass(found, Mapping)


@pytest.mark.skipif(not host_reads.WALKS_EVERY_VALUE, reason="before ansible-core 2.19 hostvars are read as they are")
def test_a_value_without_templates_never_reaches_the_template_engine(real_hostvars):
    wrapped = read_once(real_hostvars())
    with mock.patch.object(Templar, "template", autospec=True, side_effect=Templar.template) as template:
        assert wrapped["h1"]["presets"]["small"]["ctx"] == 2048
        assert wrapped["h1"]["plain"][4] == {"a": "b"}
        assert template.call_count == 0
        wrapped["h1"]["instances"]
        # Each distinct string that may hold a template once: {{ ansible_host }} (twice in the list), {{ key }}, and
        # the unsafe {{ key }} (Ansible leaves it as written).
        assert sorted(str(call.args[1]) for call in template.call_args_list) == [
            "{{ ansible_host }}", "{{ key }}", "{{ key }}"]
