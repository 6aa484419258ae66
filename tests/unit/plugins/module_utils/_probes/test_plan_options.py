"""llama_server_plan's options are declared once (plan_options.py): its documentation and ProbeOptions follow."""

import dataclasses

import yaml

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.plan_host import ProbeOptions
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.plan_options import (
    PLAN_OPTIONS,
    argument_spec,
    copied_fields,
)
from ansible_collections.llamafleet.llamacpp.plugins.modules.llama_server_plan import DOCUMENTATION

DOCUMENTED = yaml.safe_load(DOCUMENTATION)["options"]


def test_the_documentation_has_exactly_the_tables_options():
    assert set(DOCUMENTED) == set(argument_spec())


def test_types_defaults_and_elements_match_the_documentation():
    for name, spec in argument_spec().items():
        doc = DOCUMENTED[name]
        assert doc["type"] == spec["type"], name
        assert doc.get("default") == spec.get("default"), name
        assert doc.get("elements") == spec.get("elements"), name
        assert doc.get("description"), name


def test_copied_options_fill_existing_probe_fields():
    fields = {f.name for f in dataclasses.fields(ProbeOptions)}
    copied = {option.copied for option in PLAN_OPTIONS if option.copied}
    assert copied <= fields
    params = {name: spec.get("default") for name, spec in argument_spec().items()}
    ProbeOptions(preset={}, **copied_fields(params))  # the defaults are valid values of those fields
