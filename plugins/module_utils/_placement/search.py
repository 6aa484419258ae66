# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where each replica goes: a first pass by policy, then, when it leaves some out, a bounded exact search.

Pure. The first pass takes the hardest replicas first (cards before RAM, the largest need first) and gives each the
best host for its deployment's policy. That places a real fleet in one pass; but packing is hard, and a first fit
can strand room that another order would have used. So when a replica is left out, a branch-and-bound search over
the same replicas looks for the placement that leaves out the fewest, within a step budget: on a small fleet it
always finishes, which makes "every replica is placed whenever some placement holds them all" true there; on a large
one it stops at the budget, keeps the best it found, and says so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._placement.capacity import Capacity, Choice
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._placement.inputs import Deployment

# The search's budget, in hosts and ways to fit looked at (each step looks at every host a replica may use).
DEFAULT_STEP_BUDGET = 100_000

Replica = tuple[str, int]  # (deployment, replica index)


@dataclass
class Outcome:
    choices: dict[Replica, Choice] = field(default_factory=dict)
    first_pass: dict[Replica, int] = field(default_factory=dict)  # how many hosts could take it, when placed there
    searched: bool = False  # the first pass left some out, and the search ran
    finished: bool = True  # the search went through every case (its result leaves out the fewest possible)
    steps: int = 0


def hardest_first(deployments: Mapping[str, Deployment], replicas: Sequence[Replica]) -> list[Replica]:
    def key(replica: Replica) -> tuple:
        deployment = deployments[replica[0]]
        need = deployment.per_card_mib if deployment.gpus else deployment.memory_mib
        return (-deployment.gpus, -need, replica[0], replica[1])

    return sorted(replicas, key=key)


def smallest_first(deployments: Mapping[str, Deployment], replicas: Sequence[Replica]) -> list[Replica]:
    """When not every replica fits, the most of them fit with the smallest first (by the memory they take)."""
    return sorted(replicas, key=lambda replica: (deployments[replica[0]].memory_mib, deployments[replica[0]].gpus,
                                                 replica[0], replica[1]))


class _Search:
    def __init__(self, deployments, eligible, capacity: Capacity, occupied, budget):
        self.deployments = deployments
        self.eligible = eligible  # deployment -> host names it may use, in name order
        self.capacity = capacity
        self.occupied = occupied  # deployment -> hosts that already run one of its replicas (spread)
        self.budget = budget
        self.position = {name: place for place, name in enumerate(sorted(capacity.hosts))}
        self.steps = 0
        self.exhausted = False
        self.best: dict[Replica, Choice] = {}
        self.current: dict[Replica, Choice] = {}

    def hosts_for(self, deployment: Deployment) -> list[str]:
        taken = self.occupied.get(deployment.name, set()) if deployment.policy == "spread" else set()
        return [host for host in self.eligible[deployment.name] if host not in taken]

    def first_pass(self, order: Sequence[Replica],
                   tight: bool = False) -> tuple[dict[Replica, Choice], dict[Replica, int]]:
        """Each replica in ``order`` on the best host for its policy (``tight``: the tightest fit for every policy,
        spread still keeping its replicas on distinct hosts)."""
        choices, candidates = {}, {}
        for replica in order:
            deployment = self.deployments[replica[0]]
            taken = self.occupied.get(deployment.name, set())
            choice, count = self.capacity.first_fit(deployment, self.eligible[deployment.name], taken, tight)
            if choice is None:
                continue
            self._take(replica, choice)
            choices[replica], candidates[replica] = choice, count
        return choices, candidates

    def repair(self, order: Sequence[Replica], choices: dict[Replica, Choice]) -> set[Replica]:
        """Fit each replica left out by moving one placed replica of another deployment from a host to another host;
        ``choices`` is changed in place. Returns the replicas it placed or moved; stops at the step budget."""
        placed_on: dict[str, list[Replica]] = {}
        for replica, choice in choices.items():
            placed_on.setdefault(choice.host, []).append(replica)
        touched: set[Replica] = set()
        # A quarter of the budget: the search after it gets the rest.
        limit = self.steps + self.budget // 4
        for replica in order:
            if replica in choices:
                continue
            deployment = self.deployments[replica[0]]
            for host in self.hosts_for(deployment):
                if self.steps > limit:
                    return touched
                moved = self._fit_by_moving(replica, host, choices, placed_on)
                if moved is not None:
                    touched |= {replica, moved}
                    break
        return touched

    def _fit_by_moving(self, replica: Replica, host: str, choices: dict[Replica, Choice],
                       placed_on: dict[str, list[Replica]]) -> Replica | None:
        """The replica moved off ``host`` to fit ``replica`` there, or None."""
        deployment = self.deployments[replica[0]]
        for other in sorted(placed_on.get(host, [])):
            if other[0] == replica[0]:
                continue
            self.steps += 1
            before, moving = choices[other], self.deployments[other[0]]
            self._release(other, before)
            mine = self.capacity.best_on(deployment, host)
            if mine is not None:
                self._take(replica, mine)
                elsewhere = [choice for name in self.hosts_for(moving) if name != host
                             and (choice := self.capacity.best_on(moving, name)) is not None]
                self.steps += len(self.eligible[moving.name])
                if elsewhere:
                    moved = min(elsewhere, key=lambda choice: choice.score)
                    self._take(other, moved)
                    choices[other], choices[replica] = moved, mine
                    placed_on[host].remove(other)
                    placed_on.setdefault(moved.host, []).append(other)
                    placed_on[host].append(replica)
                    return other
                self._release(replica, mine)
            self._take(other, before)
        return None

    def undo(self, choices: Mapping[Replica, Choice]) -> None:
        for replica, choice in choices.items():
            self._release(replica, choice)

    def _take(self, replica: Replica, choice: Choice) -> None:
        self.capacity.take(choice)
        self.occupied.setdefault(replica[0], set()).add(choice.host)
        self.current[replica] = choice

    def _release(self, replica: Replica, choice: Choice) -> None:
        self.capacity.give_back(choice)
        self.occupied[replica[0]].discard(choice.host)
        del self.current[replica]

    def _key(self, choice: Choice) -> tuple:
        return (self.position[choice.host], choice.cards)

    def search(self, order: Sequence[Replica], start: dict[Replica, Choice]) -> None:
        """Branch and bound: the most replicas placed. Replicas of one deployment are alike, so they are placed in
        host order and a left-out one leaves out those after it (each set of hosts is tried once)."""
        self.best = dict(start)
        self._walk(order, 0, None)

    def _walk(self, order: Sequence[Replica], at: int, previous: tuple | None) -> None:
        if self.exhausted:
            return
        if self.steps > self.budget:
            self.exhausted = True
            return
        if len(self.current) + (len(order) - at) <= len(self.best):
            return  # even placing every one left cannot beat the best found
        if at == len(order):
            self.best = dict(self.current)
            return
        replica = order[at]
        deployment = self.deployments[replica[0]]
        same = at > 0 and order[at - 1][0] == replica[0]
        floor = previous if same else None
        if same and previous == ():
            self._walk(order, at + 1, ())  # the one before was left out: so is this one
            return
        hosts = self.hosts_for(deployment)
        options = [choice for host in hosts for choice in self.capacity.options_on(deployment, host)]
        self.steps += len(hosts) + len(options) + 1
        options.sort(key=lambda choice: choice.score)
        for choice in options:
            key = self._key(choice)
            if floor is not None and (key < floor or (deployment.policy == "spread" and key[0] <= floor[0])):
                continue
            self._take(replica, choice)
            self._walk(order, at + 1, key)
            self._release(replica, choice)
            if self.exhausted or len(self.best) == len(self.current) + (len(order) - at):
                return  # nothing better is possible below this point
        self._walk(order, at + 1, ())


def solve(deployments: Mapping[str, Deployment], replicas: Sequence[Replica], eligible: Mapping[str, tuple],
          capacity: Capacity, occupied: dict[str, set[str]], *, budget: int = DEFAULT_STEP_BUDGET) -> Outcome:
    """Choices for as many of ``replicas`` as fit. ``eligible``: the hosts each deployment may use (a tuple, in name
    order); ``occupied``: the hosts each deployment's kept replicas run on (spread keeps them distinct);
    ``capacity`` holds what the kept replicas take. Both are left as the result has them."""
    search = _Search(deployments, eligible, capacity, occupied, budget)
    # A deployment that fits no host even before anything new is placed is left out of every pass and the search.
    alone = {name for name in {replica[0] for replica in replicas}
             if capacity.first_fit(deployments[name], eligible[name], set(), tightest=True)[0] is not None}
    order = hardest_first(deployments, [replica for replica in replicas if replica[0] in alone])
    outcome = Outcome()
    outcome.choices, outcome.first_pass = search.first_pass(order)
    if len(outcome.choices) == len(order):
        return outcome
    # Not every replica fits: the smallest first, on the tightest hosts, places the most in one pass; the best of the
    # passes is kept.
    search.undo(outcome.choices)
    for tight in (False, True):
        small, small_candidates = search.first_pass(smallest_first(deployments, order), tight)
        search.undo(small)
        if len(small) > len(outcome.choices):
            outcome.choices, outcome.first_pass = small, small_candidates
    # Then one replica moved to make room for one left out, as long as that fits more.
    for replica, choice in outcome.choices.items():
        search._take(replica, choice)
    touched = search.repair(order, outcome.choices)
    outcome.first_pass = {replica: count for replica, count in outcome.first_pass.items() if replica not in touched}
    if len(outcome.choices) == len(order):
        return outcome
    search.undo(outcome.choices)
    # Then the search, from nothing placed; it keeps the passes' result unless it places more.
    search.search(order, outcome.choices)
    outcome.searched, outcome.finished, outcome.steps = True, not search.exhausted, search.steps
    if len(search.best) > len(outcome.choices):
        outcome.choices = search.best
        outcome.first_pass = {}
    for replica, choice in outcome.choices.items():
        search._take(replica, choice)
    return outcome
