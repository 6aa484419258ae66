"""The rollout's bounds (rollout_bounds.py): llama_fleet_max_unavailable and llama_fleet_max_surge read, refused,
and turned into numbers of replicas, table-driven."""

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._gateway import rollout_bounds as rbd

# What the deploy playbook calls them (plugin_utils/role_vars.py passes these names).
NAMES = ("llama_fleet_max_unavailable", "llama_fleet_max_surge")


@pytest.mark.parametrize(("value", "shown"), [
    (0, "0"), (3, "3"), ("3", "3"), (" 2 ", "2"), (2.0, "2"), ("25%", "25%"), ("0%", "0%"), ("100%", "100%"),
    ("12.5%", "12.5%"), ("10 %", "10%"), (10000, "10000"),
])
def test_accepted_values(value, shown):
    assert str(rbd.read_bound(value, "llama_fleet_max_unavailable")) == shown


@pytest.mark.parametrize("value", [
    -1, "-1", "-5%", "101%", "250%", "many", "", "1.5", 1.5, True, False, None, [1], {"a": 1}, "10001", 10001,
    "%", "25%%", "1e3",
])
def test_refused_values_name_the_variable(value):
    with pytest.raises(rbd.BoundError) as err:
        rbd.read_bound(value, "llama_fleet_max_surge")
    assert str(err.value).startswith(f"llama_fleet_max_surge: {value!r} is not a whole number from 0 to 10000, or "
                                     'a percentage from "0%" to "100%"')


@pytest.mark.parametrize(("max_unavailable", "replicas", "allowed"), [
    # The default: 25 %, rounded down, at least 1, never all of them.
    (None, 1, 1), (None, 2, 1), (None, 3, 1), (None, 4, 1), (None, 7, 1), (None, 8, 2), (None, 100, 25),
    (None, 1000, 250), (None, 0, 0),
    # A number: at most it, never all of a model with two or more.
    (1, 5, 1), (3, 5, 3), (5, 5, 4), (9, 2, 1), (2, 1, 1),
    # A percentage: rounded down, at least 1.
    ("50%", 3, 1), ("50%", 4, 2), ("100%", 4, 3), ("100%", 1, 1), ("10%", 3, 1), ("33.4%", 3, 1), ("12.5%", 8, 1),
    # 0 (with surge): none.
    (0, 5, 0), ("0%", 5, 0), (0, 1, 0),
])
def test_how_many_may_be_out(max_unavailable, replicas, allowed):
    bounds = rbd.read_bounds(max_unavailable, 1, names=NAMES)
    assert bounds.unavailable(replicas) == allowed


@pytest.mark.parametrize(("max_surge", "replicas", "extra"), [
    (None, 4, 0), (0, 4, 0), (1, 4, 1), (5, 2, 5), ("25%", 4, 1), ("25%", 5, 2), ("100%", 3, 3), ("1%", 3, 1),
    ("50%", 0, 0),
])
def test_how_many_may_start_first(max_surge, replicas, extra):
    assert rbd.read_bounds(None, max_surge, names=NAMES).surge(replicas) == extra


@pytest.mark.parametrize(("max_unavailable", "max_surge", "says"), [
    (0, 0, "llama_fleet_max_unavailable is 0 and llama_fleet_max_surge is 0: no rollout could restart a replica"),
    ("0%", None, "llama_fleet_max_unavailable is 0 and llama_fleet_max_surge is 0"),
    ("0%", "0%", "llama_fleet_max_unavailable is 0 and llama_fleet_max_surge is 0"),
    ("lots", -2, "llama_fleet_max_unavailable: 'lots' is not a whole number from 0 to 10000, or a percentage from "
                 '"0%" to "100%" (such as "25%"); llama_fleet_max_surge: -2 is not'),
])
def test_refused_pairs(max_unavailable, max_surge, says):
    with pytest.raises(rbd.BoundError) as err:
        rbd.read_bounds(max_unavailable, max_surge, names=NAMES)
    assert says in str(err.value)


def test_zero_unavailable_with_surge_is_accepted():
    bounds = rbd.read_bounds(0, "25%")
    assert (bounds.unavailable(4), bounds.surge(4)) == (0, 1)


@pytest.mark.parametrize(("deployments", "found", "says"), [
    ([{"name": "chat", "max_unavailable": "50%"}, {"name": "code"}], {"chat": ("50%", "0"), "code": ("25%", "0")},
     ""),
    ([{"name": "chat", "max_surge": 1, "max_unavailable": 0}], {"chat": ("0", "1")}, ""),
    ([{"name": "chat", "max_unavailable": "half"}], None,
     "llama_fleet_deployments[0] (chat): max_unavailable: 'half' is not a whole number"),
    # 0 of its own and the fleet's surge of 0: the message names where each comes from.
    ([{"name": "a"}, {"name": "chat", "max_unavailable": 0}], None,
     "llama_fleet_deployments[1] (chat): max_unavailable is 0 and llama_fleet_max_surge is 0"),
    ("not a list", {}, ""),
])
def test_deployment_bounds(deployments, found, says):
    fleet = rbd.read_bounds(names=NAMES)
    if says:
        with pytest.raises(rbd.BoundError) as err:
            rbd.deployment_bounds(deployments, fleet, listed_as="llama_fleet_deployments", fleet_names=NAMES)
        assert says in str(err.value)
        return
    got = rbd.deployment_bounds(deployments, fleet, listed_as="llama_fleet_deployments", fleet_names=NAMES)
    assert {name: (str(bounds.max_unavailable), str(bounds.max_surge)) for name, bounds in got.items()} == found


def test_the_names_default_to_the_fields():
    with pytest.raises(rbd.BoundError, match=r"^max_unavailable is 0 and max_surge is 0"):
        rbd.read_bounds(0, 0)
