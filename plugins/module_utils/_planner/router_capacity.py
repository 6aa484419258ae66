# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""How many of a router instance's models may be loaded at once: ``--models-max`` from memory, not a count.

Pure. A router loads a model on its first request and, at ``--models-max`` loaded models, unloads the one used
least recently before it loads another: the engine counts models, it never looks at memory. So the bound is
chosen here so that ANY set of that many models fits together: for each device (the host's RAM, each card), the
sum of the largest demands on that device, k of them, must fit in its room. Taking the largest first makes the
bound hold whichever models the requests pick. The demands are the planner's per-launch estimates
(``_planner/memory_estimate.py``), model by model, on this host's facts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.errors import PlanError
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.memory_estimate import MemoryEstimate


@dataclass(frozen=True)
class ModelsMax:
    """The bound, and why: ``fits`` models always fit together; ``worst_mib`` is what they take, per device, at
    most (what the placement counts for the instance); ``limit`` the device that stops one more, "" when every
    model fits."""

    value: int
    fits: int
    worst_mib: Mapping[str, int]
    limit: str = ""

    def explanation(self, models: int) -> str:
        used = ", ".join(f"{device} {mib} MiB" for device, mib in sorted(self.worst_mib.items()))
        if self.fits >= models:
            return f"--models-max {self.value}: all {models} models fit together ({used} at most)"
        return (f"--models-max {self.value}: any {self.fits} of the {models} models fit together ({used} at most); "
                f"one more would not fit in {self.limit}")


def _demands(estimate: MemoryEstimate) -> dict[str, int]:
    demands: dict[str, int] = {}
    for device in estimate.devices:
        demands[device.device] = demands.get(device.device, 0) + device.total_mib
    return demands


def largest_that_fit(estimates: Mapping[str, MemoryEstimate], room_mib: Mapping[str, int]) -> tuple[int, dict, str]:
    """The most models that always fit together, what the worst such set takes per device, and the device that
    refuses one more ("" when all fit). A device no model uses needs no room."""
    demands = {name: _demands(estimate) for name, estimate in estimates.items()}
    devices = sorted({device for per_model in demands.values() for device in per_model})
    ranked = {device: sorted((per_model.get(device, 0) for per_model in demands.values()), reverse=True)
              for device in devices}
    worst = dict.fromkeys(devices, 0)
    for count in range(len(estimates)):
        grown = {device: worst[device] + ranked[device][count] for device in devices}
        over = next((device for device in devices if grown[device] > room_mib.get(device, 0)), "")
        if over:
            return count, worst, over
        worst = grown
    return len(estimates), worst, ""


def models_max(estimates: Mapping[str, MemoryEstimate], room_mib: Mapping[str, int], requested: int | None = None,
               *, instance: str = "") -> ModelsMax:
    """``--models-max`` for a router instance: the requested value when the memory allows it, else the most that
    always fit. Refused, naming the numbers: a model whose estimate is unknown, a model that does not fit alone, a
    requested value above what fits (or 0, the engine's "no limit", when not all fit)."""
    where = f"instance {instance}: " if instance else ""
    unknown = sorted(name for name, estimate in estimates.items() if not estimate.known)
    if unknown:
        reasons = "; ".join(f"{name}: {estimates[name].why_unknown or 'unknown'}" for name in unknown)
        raise PlanError(f"{where}models_max cannot be chosen from memory: the estimate of {reasons}. Give "
                        "models_max yourself", key="models_max")
    fits, worst, over = largest_that_fit(estimates, room_mib)
    if fits == 0:
        largest = max(estimates, key=lambda name: _demands(estimates[name]).get(over, 0))
        raise PlanError(f"{where}router model {largest} needs {_demands(estimates[largest])[over]} MiB of {over}, "
                        f"which has {room_mib.get(over, 0)} MiB of room: it cannot load", key="models",
                        value=largest)
    if requested is None:
        return ModelsMax(fits, fits, worst, over)
    if isinstance(requested, bool) or not isinstance(requested, int) or requested < 0:
        raise PlanError(f"{where}models_max: {requested!r} is not a whole number of models (0: no limit, allowed "
                        "only when every model fits together)", key="models_max", value=str(requested))
    if requested == 0 and fits < len(estimates):
        raise PlanError(f"{where}models_max: 0 (no limit) would let all {len(estimates)} models load together, and "
                        f"at most {fits} fit ({over} is the limit)", key="models_max", value="0")
    if requested > fits:
        raise PlanError(f"{where}models_max: {requested} models could be loaded together, and at most {fits} of "
                        f"the {len(estimates)} always fit ({over} is the limit)", key="models_max",
                        value=str(requested))
    if requested == 0:
        return ModelsMax(0, fits, worst, over)
    # The worst case of the requested count: the largest ``requested`` demands on each device.
    demands = [_demands(estimate) for estimate in estimates.values()]
    kept = {device: sum(sorted((per_model.get(device, 0) for per_model in demands), reverse=True)[:requested])
            for device in worst}
    return ModelsMax(requested, fits, kept, over)
