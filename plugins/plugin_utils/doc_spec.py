# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""An argument spec read from a plugin's DOCUMENTATION, so its options are declared once (controller side).

The collection's own documentation fragments that the DOCUMENTATION extends are merged in, as ansible-doc
merges them: the plugin's own options win.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping

import yaml

# The keys of an option's documentation that are also argument spec keys.
SPEC_KEYS = ("type", "default", "elements", "required", "choices", "no_log", "aliases")
OWN_FRAGMENTS = "llamafleet.llamacpp."


def _fragment_options(name: str) -> dict:
    if not name.startswith(OWN_FRAGMENTS):
        raise ValueError(f"doc fragment {name}: only this collection's fragments are read here")
    module = importlib.import_module(
        "ansible_collections.llamafleet.llamacpp.plugins.doc_fragments." + name[len(OWN_FRAGMENTS):]
    )
    return (yaml.safe_load(module.ModuleDocFragment.DOCUMENTATION) or {}).get("options") or {}


def documented_options(documentation: str) -> dict:
    """The options a DOCUMENTATION declares, its fragments' included."""
    doc = yaml.safe_load(documentation) or {}
    options: dict = {}
    for fragment in doc.get("extends_documentation_fragment") or []:
        options.update(_fragment_options(fragment))
    options.update(doc.get("options") or {})
    return options


def argument_spec(documentation: str) -> dict:
    """DOCUMENTATION (YAML) -> {option: spec} for validate_argument_spec / AnsibleModule."""
    return options_spec(documented_options(documentation))


def options_spec(options: Mapping) -> dict:
    spec = {}
    for name, doc in options.items():
        entry = {key: doc[key] for key in SPEC_KEYS if key in doc}
        entry.setdefault("type", "str")
        if "suboptions" in doc:
            entry["options"] = options_spec(doc["suboptions"])
        spec[name] = entry
    return spec
