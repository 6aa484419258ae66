# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""An argument spec read from a plugin's DOCUMENTATION, so its options are declared once (controller side)."""

from __future__ import annotations

from collections.abc import Mapping

import yaml

# The keys of an option's documentation that are also argument spec keys.
SPEC_KEYS = ("type", "default", "elements", "required", "choices", "no_log", "aliases")


def argument_spec(documentation: str) -> dict:
    """DOCUMENTATION (YAML) -> {option: spec} for validate_argument_spec / AnsibleModule."""
    options = (yaml.safe_load(documentation) or {}).get("options") or {}
    return options_spec(options)


def options_spec(options: Mapping) -> dict:
    spec = {}
    for name, doc in options.items():
        entry = {key: doc[key] for key in SPEC_KEYS if key in doc}
        entry.setdefault("type", "str")
        if "suboptions" in doc:
            entry["options"] = options_spec(doc["suboptions"])
        spec[name] = entry
    return spec
