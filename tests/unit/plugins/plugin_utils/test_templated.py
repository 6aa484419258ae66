"""A host's variable templated by a controller plugin, each distinct string once (plugin_utils/templated.py): the
same value as Ansible's templating of it whole, with one template call per distinct string."""

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils.templated import templated
from tests.unit.support.host_vars import host_variables

VARIABLES = """
ansible_host: 10.0.0.7
key: secret-key-01
envs: {A: "{{ key }}-x"}
deployments:
  - {name: a, settings: {host: "{{ ansible_host }}", ctx: 2048}, api_key: "{{ key }}", environment: "{{ envs }}"}
  - {name: b, settings: {host: "{{ ansible_host }}"}, api_key: "{{ key }}", environment: "{{ envs }}",
     note: !unsafe "{{ key }}", replicas: 2, labels: [x, "{{ ansible_host }}"]}
whole: "{{ deployments }}"
plain: [1, true, null, {a: b}]
"""


class _Counting:
    """A templar that counts its template calls."""

    def __init__(self, templar):
        self.templar = templar
        self.calls = []

    def template(self, value):
        self.calls.append(str(value))
        return self.templar.template(value)


def _host_templar(tmp_path):
    variables, templar, _loader = host_variables(tmp_path, VARIABLES)
    return variables, templar


@pytest.mark.parametrize(("name", "calls"), [
    # Each distinct string that may hold a template once; the unsafe "{{ key }}" is not the trusted one. A string
    # without "{" is no template: it is not asked about.
    ("deployments", ["{{ ansible_host }}", "{{ key }}", "{{ envs }}", "{{ key }}"]),
    ("whole", ["{{ deployments }}"]),  # a template of the list: templated once, whole
    ("plain", []),
])
def test_the_same_value_as_templating_it_whole_each_string_once(tmp_path, name, calls):
    variables, templar = _host_templar(tmp_path)
    counting = _Counting(templar)
    found = templated(counting, variables[name])
    assert found == templar.template(variables[name])
    assert counting.calls == calls


def test_deployments_templated(tmp_path):
    variables, templar = _host_templar(tmp_path)
    first, second = templated(templar, variables["deployments"])
    assert first == {"name": "a", "settings": {"host": "10.0.0.7", "ctx": 2048}, "api_key": "secret-key-01",
                     "environment": {"A": "secret-key-01-x"}}
    # Unsafe stays as written, even beside the same template trusted; a container is each place's own copy.
    assert second["note"] == "{{ key }}"
    assert second["labels"] == ["x", "10.0.0.7"]
    assert second["environment"] == first["environment"]
    assert second["environment"] is not first["environment"]
