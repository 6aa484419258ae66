"""--models-max of a router instance from the models' memory estimates: any set of that many models fits."""

from __future__ import annotations

import itertools

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.errors import PlanError
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.memory_estimate import (
    DeviceMemory,
    MemoryEstimate,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.router_capacity import (
    largest_that_fit,
    models_max,
)


def on(**mib: int) -> MemoryEstimate:
    """An estimate taking ``mib`` per device (``host``, or a card's index as ``gpu0``)."""
    return MemoryEstimate(devices=tuple(DeviceMemory(device.removeprefix("gpu"), model_mib=value)
                                        for device, value in mib.items()), known=True)


CPU = {"chat": on(host=4000), "code": on(host=3000), "embed": on(host=500), "old": on(host=6000)}
GPU = {"chat": on(host=300, gpu0=9000), "code": on(host=200, gpu0=7000), "embed": on(host=100, gpu0=1000)}


@pytest.mark.parametrize(("estimates", "room", "fits", "worst", "limit"), [
    # The largest first: 6000 + 4000 = 10000 fits 10000; + 3000 does not.
    (CPU, {"host": 10000}, 2, {"host": 10000}, "host"),
    (CPU, {"host": 13000}, 3, {"host": 13000}, "host"),
    (CPU, {"host": 13500}, 4, {"host": 13500}, ""),
    (CPU, {"host": 99999}, 4, {"host": 13500}, ""),
    (CPU, {"host": 9999}, 1, {"host": 6000}, "host"),
    # Each device on its own: the card stops at 2 (9000 + 7000 = 16000), the RAM would take all three.
    (GPU, {"host": 1000, "0": 16000}, 2, {"0": 16000, "host": 500}, "0"),
    (GPU, {"host": 450, "0": 24000}, 1, {"0": 9000, "host": 300}, "host"),
    (GPU, {"host": 500, "0": 24000}, 2, {"0": 16000, "host": 500}, "host"),
    (GPU, {"host": 600, "0": 17000}, 3, {"0": 17000, "host": 600}, ""),
    ({}, {"host": 0}, 0, {}, ""),
])
def test_the_most_that_always_fit(estimates, room, fits, worst, limit):
    assert largest_that_fit(estimates, room) == (fits, worst, limit)


@pytest.mark.parametrize("room", [9000, 10000, 12999, 13000, 13500, 20000])
def test_every_set_of_that_size_fits(room):
    count, _worst, _limit = largest_that_fit(CPU, {"host": room})
    for chosen in itertools.combinations(CPU.values(), count):
        assert sum(estimate.host_mib for estimate in chosen) <= room
    if count < len(CPU):  # and one more can overflow
        assert any(sum(estimate.host_mib for estimate in chosen) > room
                   for chosen in itertools.combinations(CPU.values(), count + 1))


@pytest.mark.parametrize(("requested", "value", "worst"), [
    (None, 2, {"host": 10000}),
    (1, 1, {"host": 6000}),
    (2, 2, {"host": 10000}),
])
def test_a_requested_value_within_the_memory(requested, value, worst):
    chosen = models_max(CPU, {"host": 10000}, requested)
    assert (chosen.value, chosen.fits, chosen.worst_mib) == (value, 2, worst)


def test_no_limit_only_when_every_model_fits():
    assert models_max(CPU, {"host": 13500}, 0).value == 0
    with pytest.raises(PlanError, match=r"0 \(no limit\) would let all 4 models load together, and at most 3 fit"):
        models_max(CPU, {"host": 13000}, 0, instance="router")


@pytest.mark.parametrize(("requested", "said"), [
    (3, "models_max: 3 models could be loaded together, and at most 2 of the 4 always fit (host is the limit)"),
    (-1, "-1 is not a whole number"),
    (True, "True is not a whole number"),
    ("2", "'2' is not a whole number"),
    (1.5, "1.5 is not a whole number"),
])
def test_refused_values_name_the_numbers(requested, said):
    with pytest.raises(PlanError) as refused:
        models_max(CPU, {"host": 10000}, requested, instance="router")
    assert said in str(refused.value)
    assert str(refused.value).startswith("instance router: models_max")
    assert refused.value.key == "models_max"


def test_a_model_that_cannot_load_alone_is_named():
    with pytest.raises(PlanError, match="router model old needs 6000 MiB of host, which has 5000 MiB of room"):
        models_max(CPU, {"host": 5000})


def test_an_unknown_estimate_is_refused_with_its_reason():
    estimates = {**CPU, "odd": MemoryEstimate(known=False, why_unknown="no tensor table")}
    with pytest.raises(PlanError, match=r"the estimate of odd: no tensor table\. Give models_max yourself"):
        models_max(estimates, {"host": 99999})


@pytest.mark.parametrize(("room", "text"), [
    (10000, "--models-max 2: any 2 of the 4 models fit together (host 10000 MiB at most); one more would not fit in "
            "host"),
    (20000, "--models-max 4: all 4 models fit together (host 13500 MiB at most)"),
])
def test_the_choice_explains_itself(room, text):
    assert models_max(CPU, {"host": room}).explanation(len(CPU)) == text
