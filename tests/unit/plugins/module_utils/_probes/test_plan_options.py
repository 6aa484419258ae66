"""llama_server_plan's options are declared once (plan_options.py): ProbeOptions follows it (and its documentation,
tests/unit/plugins/test_option_docs.py)."""

import dataclasses

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.plan_host import ProbeOptions
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.plan_options import (
    PLAN_OPTIONS,
    argument_spec,
    copied_fields,
)


def test_copied_options_fill_existing_probe_fields():
    fields = {f.name for f in dataclasses.fields(ProbeOptions)}
    copied = {option.copied for option in PLAN_OPTIONS if option.copied}
    assert copied <= fields
    params = {name: spec.get("default") for name, spec in argument_spec().items()}
    ProbeOptions(preset={}, **copied_fields(params))  # the defaults are valid values of those fields
