"""The gateway host's side (_converge/gateway.py): the drain's waits and the return to rotation, on an in-memory
runtime API (the real HAProxy runs them in tests/integration/test_gateway_real.py), and the socket's errors."""

import json

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._converge import gateway
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._gateway.runtime_api import ServerState
from tests.unit.support.clock import Clock


class Runtime:
    """Servers whose requests in flight end after given times; set commands change their status."""

    def __init__(self, clock, servers):
        self.clock = clock
        self.servers = servers  # name -> {"backend", "status", "busy_until"}
        self.sent = []

    def states(self):
        return [ServerState(backend=entry["backend"], server=name, status=entry["status"],
                            in_flight=int(self.clock() < entry.get("busy_until", 0)), queued=0)
                for name, entry in self.servers.items()]

    def act(self, action, state):
        self.sent.append((action, state.server))
        entry = self.servers[state.server]
        entry["status"] = {"drain": "DRAIN", "ready": "UP", "up": entry["status"]}[action]


def _drain(runtime, clock, server, timeout_s, tmp_path, *, wall=lambda: 1000.0):
    return gateway.drain(runtime, server, timeout_s, lock_path=str(tmp_path / "lock"),
                         times_path=str(tmp_path / "drained.json"), clock=clock, sleep=clock.sleep, wall=wall)


def _ready(runtime, server, tmp_path, *, wall=lambda: 1000.0):
    return gateway.ready(runtime, server, lock_path=str(tmp_path / "lock"), times_path=str(tmp_path / "drained.json"),
                         wall=wall)


def test_drain_waits_for_the_requests_in_flight(tmp_path):
    clock = Clock()
    runtime = Runtime(clock, {"h1:main": {"backend": "model_m", "status": "UP", "busy_until": 2.0},
                              "h2:main": {"backend": "model_m", "status": "UP"}})
    result = _drain(runtime, clock, "h1:main", 30, tmp_path)
    assert runtime.sent == [("drain", "h1:main")]
    assert (result["drained"], result["changed"], result["in_flight_left"]) == (True, True, 0)
    assert result["waited_s"] == 2.0
    assert result["words"] == "h1:main: drained, no request in flight (waited 2.0 s)"
    # Drained already: no change.
    assert _drain(runtime, clock, "h1:main", 30, tmp_path)["changed"] is False


def test_drain_gives_up_on_requests_at_its_timeout_and_says_so(tmp_path):
    clock = Clock()
    runtime = Runtime(clock, {"h1:main": {"backend": "model_m", "status": "UP", "busy_until": 999}})
    result = _drain(runtime, clock, "h1:main", 5, tmp_path)
    assert result["in_flight_left"] == 1
    assert "1 request(s) still in flight after the drain timeout (5 s); restarting anyway" in result["words"]


def test_drain_waits_for_the_other_replica_held_out(tmp_path):
    clock = Clock()
    runtime = Runtime(clock, {"h1:main": {"backend": "model_m", "status": "UP"},
                              "h2:main": {"backend": "model_m", "status": "DRAIN"}})
    original = runtime.states

    def states():  # the other rollout puts h2 back after 3 s
        if clock() >= 3:
            runtime.servers["h2:main"]["status"] = "UP"
        return original()

    runtime.states = states
    result = _drain(runtime, clock, "h1:main", 30, tmp_path)
    assert result["drained"] is True
    assert clock() >= 3
    assert result["words"].endswith("(first every other replica of model_m is out of rotation (h2:main); waiting "
                                    "for one to come back)")


def test_drain_and_ready_of_a_server_the_gateway_does_not_route(tmp_path):
    clock = Clock()
    runtime = Runtime(clock, {})
    assert _drain(runtime, clock, "new:main", 5, tmp_path) == {
        "server": "new:main", "drained": False, "changed": False, "words": "new:main: not in this gateway"}
    assert _ready(runtime, "new:main", tmp_path)["words"] == "new:main: not in this gateway"


def test_ready_sets_health_up_then_ready(tmp_path):
    clock = Clock()
    runtime = Runtime(clock, {"h1:main": {"backend": "model_m", "status": "DRAIN"}})
    assert _ready(runtime, "h1:main", tmp_path) == {"server": "h1:main", "ready": True, "changed": True,
                                                    "words": "h1:main: back in rotation"}
    assert runtime.sent == [("up", "h1:main"), ("ready", "h1:main")]
    assert _ready(runtime, "h1:main", tmp_path)["changed"] is False


def test_ready_says_how_long_the_server_was_out_of_rotation(tmp_path):
    """The drain records when the server left rotation (the gateway host's clock); its return says for how long,
    once, and forgets it."""
    clock = Clock()
    runtime = Runtime(clock, {"h1:main": {"backend": "model_m", "status": "UP"},
                              "h1:side": {"backend": "model_m", "status": "UP"}})
    _drain(runtime, clock, "h1:main", 30, tmp_path, wall=lambda: 1000.0)
    _drain(runtime, clock, "h1:side", 30, tmp_path, wall=lambda: 1001.0)
    back = _ready(runtime, "h1:main", tmp_path, wall=lambda: 1002.46)
    assert (back["out_s"], back["words"]) == (2.5, "h1:main: back in rotation after 2.5 s out of it")
    assert json.loads((tmp_path / "drained.json").read_text()) == {"h1:side": 1001.0}
    again = _ready(runtime, "h1:main", tmp_path)
    assert "out_s" not in again
    # A damaged record is no record: the server still goes back.
    (tmp_path / "drained.json").write_text("{not json")
    side = _ready(runtime, "h1:side", tmp_path)
    assert (side["ready"], side["words"]) == (True, "h1:side: back in rotation")


def test_the_socket_says_what_it_could_not_do(tmp_path):
    api = gateway.RuntimeSocket(str(tmp_path / "missing.sock"), timeout_s=1)
    with pytest.raises(gateway.GatewayError, match="did not answer 'show'"):
        api.states()
    with pytest.raises(gateway.GatewayError, match="one command at a time"):
        api.ask("show stat; shutdown sessions")
