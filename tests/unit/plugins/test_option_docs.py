"""Options are declared one way: as a Python argument spec beside the code that reads them, and the documentation
is held to it. ansible-test's validate-modules does this for modules; the action plugins' documentation lives in
a stub module it cannot tie to the action, so this test does it for every spec the collection hands to Ansible,
the doc fragments merged in as ansible-doc merges them."""

import importlib

import pytest
import yaml

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes import plan_options

PREFIX = "ansible_collections.llamafleet.llamacpp.plugins."
SPEC_KEYS = ("type", "default", "elements", "choices", "required")


def _spec(path: str) -> dict:
    module_name, _dot, attribute = path.rpartition(".")
    return getattr(importlib.import_module(PREFIX + module_name), attribute)


SPECS = {
    "llama_server_apply": _spec("modules.llama_server_apply.ARGUMENT_SPEC"),
    "llama_server_judge": _spec("modules.llama_server_judge.ARGUMENT_SPEC"),  # host_judge.argument_spec()
    "llama_server_plan": plan_options.argument_spec(),
    "llama_server_instance": _spec("action.llama_server_instance.ARGUMENT_SPEC"),
    "llama_server_host": _spec("action.llama_server_host.ARGUMENT_SPEC"),
    # The controller's actions: the options they take (their spec, and fleet_variables where they read the deploy
    # playbook's variables).
    **{name: _spec(f"action.{name}.ActionModule").argument_spec() for name in (
        "fleet_summary", "fleet_metrics_targets", "fleet_deployments", "fleet_run", "fleet_rollout", "fleet_report",
        "fleet_ledger", "llama_gateway_judge")},
}


def documented_options(plugin: str) -> dict:
    doc = yaml.safe_load(importlib.import_module(f"{PREFIX}modules.{plugin}").DOCUMENTATION)
    options: dict = {}
    for fragment in doc.get("extends_documentation_fragment") or ():
        name, _dot, variable = fragment.removeprefix("llamafleet.llamacpp.").partition(".")
        text = getattr(importlib.import_module(f"{PREFIX}doc_fragments.{name}").ModuleDocFragment,
                       (variable or "documentation").upper())
        options.update((yaml.safe_load(text) or {}).get("options") or {})
    options.update(doc.get("options") or {})
    return options


def differences(spec: dict, docs: dict, where: str) -> list[str]:
    found = [f"{where}: {name} is documented, not in the spec" for name in sorted(set(docs) - set(spec))]
    found += [f"{where}: {name} is in the spec, not documented" for name in sorted(set(spec) - set(docs))]
    for name in sorted(set(spec) & set(docs)):
        want, doc = dict(spec[name]), docs[name]
        want.setdefault("type", "str")
        for key in SPEC_KEYS:
            if want.get(key) != doc.get(key) and not (key == "required" and not want.get(key) and not doc.get(key)):
                found.append(f"{where}.{name}: {key} is {doc.get(key)!r} in the docs, {want.get(key)!r} in the spec")
        if not doc.get("description"):
            found.append(f"{where}.{name}: no description")
        found += differences(want.get("options") or {}, doc.get("suboptions") or {}, f"{where}.{name}")
    return found


@pytest.mark.parametrize("plugin", sorted(SPECS))
def test_the_documentation_is_the_argument_spec(plugin):
    assert differences(SPECS[plugin], documented_options(plugin), plugin) == []


def test_a_difference_is_found():
    """Proof that the comparison can fail: a default, a missing option and a suboption's type."""
    spec = {"a": {"type": "int", "default": 1}, "b": {"type": "dict", "options": {"c": {"type": "bool"}}}}
    docs = {"a": {"type": "int", "default": 2, "description": "x"},
            "b": {"type": "dict", "description": "y", "suboptions": {"c": {"type": "str", "description": "z"}}},
            "d": {"type": "str", "description": "w"}}
    assert differences(spec, docs, "p") == [
        "p: d is documented, not in the spec",
        "p.a: default is 2 in the docs, 1 in the spec",
        "p.b.c: type is 'str' in the docs, 'bool' in the spec",
    ]


@pytest.mark.parametrize("plugin", sorted(SPECS))
def test_the_returned_values_are_documented_in_valid_yaml(plugin):
    """RETURN is read by ansible-doc only: a colon in a plain scalar there breaks it without breaking the options."""
    returned = yaml.safe_load(importlib.import_module(f"{PREFIX}modules.{plugin}").RETURN)
    assert isinstance(returned, dict)
    assert all(isinstance(entry, dict) and entry.get("description") for entry in returned.values())
