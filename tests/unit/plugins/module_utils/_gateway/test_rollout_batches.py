"""The rollout's batches with a gateway (rollout_batches.py): no batch restarts every replica of a model."""

import itertools

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._gateway import rollout_batches as rb


@pytest.mark.parametrize(
    ("serial", "total", "sizes"),
    [([1, "100%"], 4, [1, 4]), ([1, "50%"], 5, [1, 2]), (["10%"], 3, [1]), ([], 3, [3]), ([2, 3], 9, [2, 3]),
     (["1"], 2, [1])],
)
def test_batch_sizes(serial, total, sizes):
    assert rb.batch_sizes(serial, total) == sizes


@pytest.mark.parametrize(
    ("hosts", "restarts", "replicas", "serial", "expected"),
    [
        # Two replicas of one model: never in the same batch.
        (["a", "b"], {"a": ["m"], "b": ["m"]}, {"m": 2}, [1, "100%"], (["a", "b"], [1, 1])),
        (["a", "b", "c"], {"a": ["m"], "b": ["m"], "c": ["m"]}, {"m": 3}, ["100%"], (["a", "b", "c"], [2, 1])),
        # A host restarting another model joins the batch; the conflicting one waits for the next.
        (["a", "b", "c", "d"], {"a": ["m"], "b": ["m"], "c": ["n"], "d": ["m"]}, {"m": 3, "n": 1}, [1, "100%"],
         (["a", "b", "c", "d"], [1, 3])),
        (["a", "b", "c", "d"], {"a": ["n"], "b": ["m"], "c": ["m"], "d": ["n"]}, {"m": 2, "n": 2}, ["100%"],
         (["a", "b", "c", "d"], [2, 2])),
        (["a", "b", "c", "d"], {"a": ["m"], "b": ["m"], "c": ["n"], "d": ["n"]}, {"m": 2, "n": 2}, ["100%"],
         (["a", "c", "b", "d"], [2, 2])),
        # A single replica: nothing to keep, the operator's batches as they are.
        (["a", "b"], {"a": ["m"], "b": ["n"]}, {"m": 1, "n": 1}, [1, "100%"], (["a", "b"], [1, 1])),
        (["a", "b", "c"], {}, {}, [1, "100%"], (["a", "b", "c"], [1, 2])),
        # Replicas on hosts that restart nothing do not count against the batch.
        (["a", "b", "c"], {"a": [], "b": ["m"], "c": ["m"]}, {"m": 3}, ["100%"], (["a", "b", "c"], [3])),
    ],
)
def test_rollout_batches(hosts, restarts, replicas, serial, expected):
    assert rb.rollout_batches(hosts, restarts, replicas, serial) == expected


@pytest.mark.parametrize("size", [2, 3, 4, 5])
def test_every_batch_keeps_a_replica(size):
    """Every assignment of two models to up to 5 hosts, every serial: each host rolls out once, the canary first,
    and no batch restarts all the serving replicas of a model that has two or more."""
    hosts = [f"h{i}" for i in range(size)]
    for models in itertools.product(("m", "n", "mn"), repeat=size):
        restarts = {host: list(kinds) for host, kinds in zip(hosts, models, strict=False)}
        replicas = {model: sum(model in kinds for kinds in models) for model in "mn"}
        for serial in ([1, "100%"], ["100%"], [2], [1, 2, "100%"]):
            order, sizes = rb.rollout_batches(hosts, restarts, replicas, serial)
            assert sorted(order) == hosts
            assert order[0] == hosts[0]
            assert sum(sizes) == size
            assert all(sizes)
            start = 0
            for width in sizes:
                batch = order[start:start + width]
                start += width
                for model, serving in replicas.items():
                    if serving >= 2:
                        assert sum(model in restarts[host] for host in batch) <= serving - 1
                assert width <= max(rb.batch_sizes(serial, size))
