# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rollout's batches when a gateway serves the fleet: no batch takes every replica of a model out at once.

Pure. Ansible runs a batch's tasks on all its hosts together (the linear strategy), so two hosts of one batch that
restart the same model drain both its replicas at once; and a host cannot wait inside a batch for another host of
the same batch. The rule is therefore kept in the batches themselves: the rollout's hosts are reordered and its
``serial`` sizes split so that, in every batch, a model with N >= 2 serving replicas has at most N - 1 of them
restarting. The operator's ``serial`` (the canary first) still bounds each batch; a batch only gets smaller or
later hosts move up.
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


def _fits(batch_counts: Mapping[str, int], models: Iterable[str], replicas: Mapping[str, int]) -> bool:
    for model in set(models):
        serving = replicas.get(model, 0)
        if serving >= 2 and batch_counts.get(model, 0) + 1 > serving - 1:
            return False
    return True


def rollout_batches(hosts: Sequence[str], restarts: Mapping[str, Iterable[str]], replicas: Mapping[str, int],
                    serial: Sequence) -> tuple[list[str], list[int]]:
    """The hosts in rollout order and the batch sizes (a serial list for the play).

    ``hosts``: the rollout's hosts in inventory order (the first is the canary); ``restarts``: the models each
    host's rollout will restart (from the judge); ``replicas``: each model's serving replicas in the fleet.
    """
    remaining = list(hosts)
    sizes = batch_sizes(serial, len(remaining))
    order: list[str] = []
    batches: list[int] = []
    while remaining:
        want = sizes[min(len(batches), len(sizes) - 1)]
        batch: list[str] = []
        counts: dict[str, int] = {}
        for host in list(remaining):
            if len(batch) == want:
                break
            models = list(restarts.get(host) or ())
            if batch and not _fits(counts, models, replicas):
                continue
            batch.append(host)
            remaining.remove(host)
            for model in set(models):
                counts[model] = counts.get(model, 0) + 1
        order += batch
        batches.append(len(batch))
    return order, batches
