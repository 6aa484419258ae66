# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One planned instance as its compose file's text (controller side): the plan's notes, then the service.

The service mapping is ``_render/compose_service.compose_fragment``'s; it is written with Ansible's own
``to_nice_yaml``, as the role's template wrote it before, so an upgrade leaves the file as it is.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from ansible.plugins.filter.core import to_nice_yaml

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._render.compose_service import (
    ServiceSpec,
    compose_fragment,
)


def _one_line(text) -> str:
    return re.sub(r"\s+", " ", str(text))


def compose_file_text(name: str, plan: Mapping, spec: ServiceSpec, project: str,
                      managed: str = "Ansible managed") -> str:
    """The file; raises ComposeError when the plan cannot run as a compose service."""
    fragment = compose_fragment([str(w) for w in plan["argv"]], dict(plan.get("env") or {}),
                                dict(plan["decisions"]), spec)
    lines = [
        f"# {managed}",
        f"# llamafleet.llamacpp.llama_server: instance {name} of compose project {project}",
        "# The command below was planned by llamafleet.llamacpp.llama_server_plan; why:",
    ]
    lines += [f"# [{note['id']}] {_one_line(note['text'])}" for note in plan.get("notes") or []]
    lines += [f"# warning [{note['id']}] {_one_line(note['text'])}" for note in plan.get("plan_warnings") or []]
    return "\n".join(lines) + "\n" + to_nice_yaml(fragment, indent=2, sort_keys=False)
