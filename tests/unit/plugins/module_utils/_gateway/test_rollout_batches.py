"""The rollout's batches with a gateway (rollout_batches.py): no batch restarts more of a model's replicas than its
bound."""

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
    ("hosts", "restarts", "allowed", "serial", "expected"),
    [
        # One replica of m may be out at once: never two hosts restarting m in a batch.
        (["a", "b"], {"a": ["m"], "b": ["m"]}, {"m": 1}, [1, "100%"], (["a", "b"], [1, 1])),
        (["a", "b", "c"], {"a": ["m"], "b": ["m"], "c": ["m"]}, {"m": 2}, ["100%"], (["a", "b", "c"], [2, 1])),
        (["a", "b", "c"], {"a": ["m"], "b": ["m"], "c": ["m"]}, {"m": 1}, ["100%"], (["a", "b", "c"], [1, 1, 1])),
        # A host restarting another model joins the batch; the conflicting one waits for the next.
        (["a", "b", "c", "d"], {"a": ["m"], "b": ["m"], "c": ["n"], "d": ["m"]}, {"m": 2, "n": 1}, [1, "100%"],
         (["a", "b", "c", "d"], [1, 3])),
        (["a", "b", "c", "d"], {"a": ["n"], "b": ["m"], "c": ["m"], "d": ["n"]}, {"m": 1, "n": 1}, ["100%"],
         (["a", "b", "c", "d"], [2, 2])),
        (["a", "b", "c", "d"], {"a": ["m"], "b": ["m"], "c": ["n"], "d": ["n"]}, {"m": 1, "n": 1}, ["100%"],
         (["a", "c", "b", "d"], [2, 2])),
        # A host restarting two models counts once against each.
        (["a", "b", "c"], {"a": ["m", "n"], "b": ["n"], "c": ["m"]}, {"m": 1, "n": 1}, ["100%"],
         (["a", "b", "c"], [1, 2])),
        # No bound (no gateway route): the operator's batches as they are.
        (["a", "b"], {"a": ["m"], "b": ["n"]}, {}, [1, "100%"], (["a", "b"], [1, 1])),
        (["a", "b", "c"], {}, {}, [1, "100%"], (["a", "b", "c"], [1, 2])),
        # Hosts that restart nothing routed are never held back.
        (["a", "b", "c"], {"a": [], "b": ["m"], "c": ["m"]}, {"m": 2}, ["100%"], (["a", "b", "c"], [3])),
        # A bound of 0 still rolls out (one host per batch): the caller refuses it before.
        (["a", "b"], {"a": ["m"], "b": ["m"]}, {"m": 0}, ["100%"], (["a", "b"], [1, 1])),
        # The serial stays an upper bound.
        (["a", "b", "c", "d"], {}, {"m": 1}, [1, 2], (["a", "b", "c", "d"], [1, 2, 1])),
    ],
)
def test_rollout_batches(hosts, restarts, allowed, serial, expected):
    assert rb.rollout_batches(hosts, restarts, allowed, serial) == expected


def test_a_hundred_hosts_are_not_rolled_out_as_one_and_ninety_nine():
    """One model on 100 hosts, 25 % of them out at once: the canary, then batches of 25 (not 1 + 99)."""
    hosts = [f"h{i:03}" for i in range(100)]
    order, sizes = rb.rollout_batches(hosts, {host: ["m"] for host in hosts}, {"m": 25}, [1, "100%"])
    assert order == hosts
    assert sizes == [1, 25, 25, 25, 24]


@pytest.mark.parametrize("size", [2, 3, 4, 5])
def test_no_batch_takes_more_than_the_bound(size):
    """Every assignment of two models to up to 5 hosts, every serial, every bound from 1 to 3: each host rolls out
    once, the canary first, and no batch has more hosts restarting a model than its bound."""
    hosts = [f"h{i}" for i in range(size)]
    for models in itertools.product(("m", "n", "mn"), repeat=size):
        restarts = {host: list(kinds) for host, kinds in zip(hosts, models, strict=False)}
        for bound_m, bound_n in itertools.product((1, 2, 3), repeat=2):
            allowed = {"m": bound_m, "n": bound_n}
            for serial in ([1, "100%"], ["100%"], [2], [1, 2, "100%"]):
                order, sizes = rb.rollout_batches(hosts, restarts, allowed, serial)
                assert sorted(order) == hosts
                assert order[0] == hosts[0]
                assert sum(sizes) == size
                assert all(sizes)
                start = 0
                for width in sizes:
                    batch = order[start:start + width]
                    start += width
                    for model, bound in allowed.items():
                        assert sum(model in restarts[host] for host in batch) <= bound
                    assert width <= max(rb.batch_sizes(serial, size))
