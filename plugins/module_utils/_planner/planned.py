# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One launch as it was planned on its host: the planner's ``Plan`` and what the probes saw around it.

Pure. The probes make it (``_converge/planning.py``), the instance step keeps it, the renderers write files
from it and the report row reads it; ``result()`` is the one place it becomes ``llama_server_plan``'s result
fields, so the module and the instance step return the same names.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ansible_collections.llamafleet.llamacpp.plugins.module_utils.planner import Plan


@dataclass(frozen=True)
class Planned:
    plan: Plan
    # What the probes saw (the module's ``facts``): paths, sizes, GGUF fields, the GPUs listed, RAM.
    facts: Mapping = field(default_factory=dict)
    exec_start: str = ""  # argv quoted for ExecStart=
    # Engine variables the systemd manager would hand the unit and the plan did not set: the unit unsets them.
    unset_environment: tuple[str, ...] = ()
    preflight: Mapping | None = None  # what the engine's own parser said; None: not run
    port_conflict: str = ""
    engine_runs: int = 0
    # The engine's --help as the planner read it (a router instance reads its flag table from it).
    help_text: str = field(default="", repr=False)

    @property
    def gpus_listed(self) -> bool:
        """Whether the probes saw NVIDIA GPUs on the host (the unit's device rules, a compose reservation)."""
        return bool(self.facts.get("gpus"))

    @property
    def model_bytes(self) -> int:
        return int(self.facts.get("model_bytes") or 0)

    def result(self) -> dict:
        """``llama_server_plan``'s result fields."""
        plan = self.plan
        return {
            "changed": False,
            "port_conflict": self.port_conflict,
            "engine_runs": self.engine_runs,
            "unset_environment": list(self.unset_environment),
            "argv": plan.argv,
            "exec_start": self.exec_start,
            "env": plan.env,
            "notes": [note.as_dict() for note in plan.notes],
            "plan_warnings": [note.as_dict() for note in plan.warnings],
            "refusal": plan.refusal.as_dict() if plan.refusal else None,
            "external": plan.external,
            "api_key_via_env": plan.api_key_via_env,
            "slot_dir": plan.decisions.slot_dir,
            "decisions": plan.decisions.as_dict(),
            "memory": plan.memory.as_dict(),
            "preflight": dict(self.preflight) if self.preflight is not None else None,
            "facts": dict(self.facts),
        }
