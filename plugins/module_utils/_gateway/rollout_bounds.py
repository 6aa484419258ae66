# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""How many of a model's replicas a rollout may take out of the gateways' rotation at once (``max_unavailable``),
and how many extra copies it may start first (``max_surge``): the fleet's, or a deployment's own.

Pure. Both read as Kubernetes' ``maxUnavailable`` and ``maxSurge`` do: a whole number, or a percentage of the
model's replicas. A percentage of unavailable replicas rounds down, a percentage of surge copies rounds up, and
the default (25 %) lets at least one replica go. A model with another replica that could serve never has all of
them out at once, whatever the number says. Both at 0 would let no rollout make progress: refused.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass

# A deployment's own fields, over the fleet's values.
DEPLOYMENT_FIELDS = ("max_unavailable", "max_surge")
DEFAULT_MAX_UNAVAILABLE = "25%"
DEFAULT_MAX_SURGE = 0
# As many as a deployment may have replicas.
LARGEST = 10000
ACCEPTED = f'a whole number from 0 to {LARGEST}, or a percentage from "0%" to "100%" (such as "25%")'
_NUMBER = re.compile(r"\d{1,5}\Z")
_PERCENT = re.compile(r"(\d{1,3}(?:\.\d+)?)\s*%\Z")


class BoundError(ValueError):
    pass


@dataclass(frozen=True)
class Bound:
    """A number of replicas (``percent`` False) or a percentage of a model's replicas."""

    value: float
    percent: bool

    def __str__(self) -> str:
        if self.percent:
            return f"{self.value:g}%"
        return str(int(self.value))

    @property
    def zero(self) -> bool:
        return self.value == 0


def read_bound(value, name: str) -> Bound:
    """``value`` as a Bound; BoundError naming ``name``, the value and the accepted form otherwise (a word, a
    negative number, a fraction of a replica, a percentage over 100, a boolean)."""
    if isinstance(value, bool) or value is None:
        raise BoundError(f"{name}: {value!r} is not {ACCEPTED}")
    if isinstance(value, int):
        text = str(value)
    elif isinstance(value, float) and value.is_integer():
        text = str(int(value))
    elif isinstance(value, str):
        text = value.strip()
    else:
        raise BoundError(f"{name}: {value!r} is not {ACCEPTED}")
    if _NUMBER.match(text) and int(text) <= LARGEST:
        return Bound(int(text), percent=False)
    found = _PERCENT.match(text)
    if found and float(found.group(1)) <= 100:
        return Bound(float(found.group(1)), percent=True)
    raise BoundError(f"{name}: {value!r} is not {ACCEPTED}")


@dataclass(frozen=True)
class RolloutBounds:
    """The two settings of one deployment (or of the fleet)."""

    max_unavailable: Bound
    max_surge: Bound

    def unavailable(self, replicas: int) -> int:
        """How many of a model's ``replicas`` may be out of rotation at once: the number, or the percentage rounded
        down but at least 1 (unless the setting is 0), and never every replica of a model that has two or more."""
        if replicas <= 0 or self.max_unavailable.zero:
            return 0
        if self.max_unavailable.percent:
            allowed = max(1, math.floor(replicas * self.max_unavailable.value / 100 + 1e-9))
        else:
            allowed = int(self.max_unavailable.value)
        return min(allowed, replicas - 1) if replicas >= 2 else 1

    def surge(self, replicas: int) -> int:
        """How many extra copies of a model's ``replicas`` may run at once: the number, or the percentage rounded
        up."""
        if replicas <= 0 or self.max_surge.zero:
            return 0
        if self.max_surge.percent:
            return math.ceil(replicas * self.max_surge.value / 100 - 1e-9)
        return int(self.max_surge.value)


def read_bounds(max_unavailable=None, max_surge=None, *, names: tuple[str, str] = DEPLOYMENT_FIELDS,
                fallback: RolloutBounds | None = None) -> RolloutBounds:
    """Both settings read (None: the ``fallback``'s value, else the default); BoundError naming them (``names``: what
    the user calls them) when one is wrong, or when both are 0."""
    errors = []
    found = []
    for value, name, default, fallback_value in (
            (max_unavailable, names[0], DEFAULT_MAX_UNAVAILABLE, fallback and fallback.max_unavailable),
            (max_surge, names[1], DEFAULT_MAX_SURGE, fallback and fallback.max_surge)):
        try:
            found.append(read_bound(value, name) if value not in (None, "") else
                         fallback_value or read_bound(default, name))
        except BoundError as err:
            errors.append(str(err))
    if errors:
        raise BoundError("; ".join(errors))
    bounds = RolloutBounds(*found)
    if bounds.max_unavailable.zero and bounds.max_surge.zero:
        raise BoundError(f"{names[0]} is 0 and {names[1]} is 0: no rollout could restart a replica (none may leave "
                         "rotation, and no new copy may start first); let one be more than 0")
    return bounds


def deployment_bounds(deployments, fleet: RolloutBounds, *, listed_as: str = "deployments",
                      fleet_names: tuple[str, str] = DEPLOYMENT_FIELDS) -> dict[str, RolloutBounds]:
    """Each deployment's bounds by name: its own ``max_unavailable`` / ``max_surge`` over the fleet's (``fleet``,
    called ``fleet_names``). BoundError naming the deployment and the field for a wrong value, or for both at 0."""
    found, errors = {}, []
    for position, item in enumerate(deployments or []):
        if not isinstance(item, Mapping):
            continue
        name = str(item.get("name"))
        label = f"{listed_as}[{position}] ({name})"
        # A value the deployment does not give is the fleet's, and a message names it so.
        names = tuple(f"{label}: {field}" if item.get(field) not in (None, "") else fleet_name
                      for field, fleet_name in zip(DEPLOYMENT_FIELDS, fleet_names, strict=True))
        try:
            found[name] = read_bounds(item.get("max_unavailable"), item.get("max_surge"), fallback=fleet,
                                      names=names)
        except BoundError as err:
            errors.append(str(err))
    if errors:
        raise BoundError("; ".join(errors))
    return found
