# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rollout's batches when a gateway serves the fleet: no batch takes more of a model's replicas out of rotation
than the rollout's bound (``rollout_bounds``: ``max_unavailable``).

Pure. Ansible runs a batch's tasks on all its hosts together (the linear strategy), and a host cannot wait inside a
batch for another host of the same batch; each host restarts its instances one at a time (the role drains,
restarts and puts back one instance before the next). So at any moment a batch has at most one instance out per
host, and the rule is kept in the batches themselves: the rollout's hosts are reordered and its ``serial`` sizes
split so that, in every batch, at most ``allowed[model]`` hosts restart a replica of that model. The operator's
``serial`` (the canary first) still bounds each batch; a batch only gets smaller or later hosts move up. One pass
over the hosts left per batch: the cost grows with hosts x batches, and the default bound (25 %) makes about five
batches whatever the fleet's size.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence


def batch_sizes(serial: Sequence, total: int) -> list[int]:
    """Ansible's serial list as sizes: numbers as they are, "N%" of all the play's hosts (at least 1); the last
    entry repeats."""
    sizes = []
    for entry in serial or [total]:
        text = str(entry).strip()
        size = int(total * float(text[:-1]) / 100) if text.endswith("%") else int(text)
        sizes.append(max(size, 1))
    return sizes


def _fits(batch_counts: Mapping[str, int], models: Iterable[str], allowed: Mapping[str, int]) -> bool:
    return all(model not in allowed or batch_counts.get(model, 0) + 1 <= allowed[model] for model in models)


def rollout_batches(hosts: Sequence[str], restarts: Mapping[str, Iterable[str]], allowed: Mapping[str, int],
                    serial: Sequence) -> tuple[list[str], list[int]]:
    """The hosts in rollout order and the batch sizes (a serial list for the play).

    ``hosts``: the rollout's hosts in inventory order (the first is the canary); ``restarts``: the models each
    host's rollout will restart (from the judge); ``allowed``: how many replicas of each model may be out of
    rotation at once (a model not in it has no bound). A host is always taken into an empty batch, so that the
    rollout ends even when a bound is 0 (the caller refuses that case before).
    """
    remaining = list(hosts)
    sizes = batch_sizes(serial, len(remaining))
    order: list[str] = []
    batches: list[int] = []
    while remaining:
        want = sizes[min(len(batches), len(sizes) - 1)]
        batch: list[str] = []
        counts: dict[str, int] = {}
        later: list[str] = []
        for position, host in enumerate(remaining):
            if len(batch) == want:
                later += remaining[position:]
                break
            models = set(restarts.get(host) or ())
            if batch and not _fits(counts, models, allowed):
                later.append(host)
                continue
            batch.append(host)
            for model in models:
                counts[model] = counts.get(model, 0) + 1
        order += batch
        batches.append(len(batch))
        remaining = later
    return order, batches
