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


class Master:
    """The master CLI of a gateway that was reloaded: old workers (pid -> {server: busy until}) that exit once
    their last request ends; ``broken`` makes every answer a GatewayError."""

    def __init__(self, clock, path, old, broken=False):
        self.clock, self.path, self.old, self.broken = clock, str(path), old, broken
        self.asked = []

    def _alive(self):
        return {pid: busy for pid, busy in self.old.items() if any(self.clock() < until for until in busy.values())}

    def ask(self, line):
        self.asked.append(line)
        if self.broken:
            raise gateway.GatewayError(f"HAProxy's runtime API at {self.path} did not answer 'show': refused")
        if line == "show proc":
            rows = "".join(f"{pid} worker 1 0d00h00m09s 2.6.12\n" for pid in self._alive())
            return f"#<PID> <type> <reloads> <uptime> <version>\n1 master 1 0d00h00m09s 2.6.12\n# workers\n" \
                   f"2 worker 0 0d00h00m01s 2.6.12\n# old workers\n{rows}# programs\n\n"
        pid, command = line[2:].split(" ", 1)
        assert command == "show stat"
        busy = self._alive().get(int(pid))
        if busy is None:
            return f"Can't find the target PID matching the prefix '@!{pid}'\n"
        rows = "".join(f"model_m,{name},0,0,{int(self.clock() < until)},1,1,1,UP\n" for name, until in busy.items())
        return "# pxname,svname,qcur,qmax,scur,smax,slim,stot,status\n" + rows


def _master_drain(runtime, master, clock, server, timeout_s, *, tmp_path):
    return gateway.drain(runtime, server, timeout_s, master=master, lock_path=str(tmp_path / "lock"),
                         times_path=str(tmp_path / "drained.json"), clock=clock, sleep=clock.sleep,
                         wall=lambda: 1000.0)


def test_drain_waits_for_a_stream_an_old_process_holds(tmp_path):
    """A stream began before a reload: the current process counts nothing for the server, the old one does."""
    clock = Clock()
    (tmp_path / "master.sock").touch()
    runtime = Runtime(clock, {"h1:main": {"backend": "model_m", "status": "UP"},
                              "h2:main": {"backend": "model_m", "status": "UP"}})
    master = Master(clock, tmp_path / "master.sock", {700: {"h1:main": 4.0, "h2:main": 6.0}, 701: {"h1:main": 5.0}})
    result = _master_drain(runtime, master, clock, "h1:main", 30, tmp_path=tmp_path)
    assert (result["in_flight_left"], result["waited_s"]) == (0, 5.0)
    assert result["words"] == "h1:main: drained, no request in flight (waited 5.0 s)"
    # After 6 s both old workers are gone: the master is asked for the list only.
    master.asked.clear()
    _master_drain(runtime, master, clock, "h2:main", 30, tmp_path=tmp_path)
    assert master.asked == ["show proc"]


def test_drain_waits_for_a_stream_an_old_process_holds_on_a_server_the_reload_removed(tmp_path):
    """A moved replica's old copy: the gateway's new configuration routes its new copy only, but a stream that began
    before that reload is still held by the old process, on the old copy. Its removal waits for it."""
    clock = Clock()
    (tmp_path / "master.sock").touch()
    runtime = Runtime(clock, {"h1:gemma-0": {"backend": "model_m", "status": "UP"}})  # the new copy
    master = Master(clock, tmp_path / "master.sock", {700: {"h2:gemma-0": 4.0}})
    result = _master_drain(runtime, master, clock, "h2:gemma-0", 30, tmp_path=tmp_path)
    assert runtime.sent == []  # nothing to take out of this process's rotation
    assert (result["drained"], result["changed"], result["in_flight_left"], result["waited_s"]) == (True, False, 0, 4.0)
    assert result["words"] == ("h2:gemma-0: drained, no request in flight (waited 4.0 s) (not in this gateway: held "
                               "by a process a reload left running)")
    # Once the old process is gone, the server is simply not in this gateway.
    assert _master_drain(runtime, master, clock, "h2:gemma-0", 30, tmp_path=tmp_path) == {
        "server": "h2:gemma-0", "drained": False, "changed": False, "words": "h2:gemma-0: not in this gateway"}


def test_drain_asks_a_master_that_starts_again_after_a_reload_until_it_answers(tmp_path):
    """The master refuses connections while it executes itself again (a reload): the drain asks it again rather
    than take the old process's stream for none."""
    clock = Clock()
    (tmp_path / "master.sock").touch()
    runtime = Runtime(clock, {"h1:main": {"backend": "model_m", "status": "UP"}})
    master = Master(clock, tmp_path / "master.sock", {700: {"h1:main": 4.0}}, broken=True)
    original = master.ask

    def ask(line):  # refused for its first second, then the old process holds the stream until 4 s
        if clock() >= 1.0:
            master.broken = False
        return original(line)

    master.ask = ask
    result = _master_drain(runtime, master, clock, "h1:main", 30, tmp_path=tmp_path)
    assert (result["in_flight_left"], result["waited_s"]) == (0, 4.0)
    assert result["words"] == "h1:main: drained, no request in flight (waited 4.0 s)"


def test_drain_says_what_it_could_not_count(tmp_path):
    clock = Clock()
    runtime = Runtime(clock, {"h1:main": {"backend": "model_m", "status": "UP"}})
    missing = _master_drain(runtime, Master(clock, tmp_path / "none.sock", {}), clock, "h1:main", 30,
                            tmp_path=tmp_path)
    assert missing["words"] == (
        f"h1:main: drained, no request in flight (waited 0.0 s) (HAProxy's master socket {tmp_path / 'none.sock'} "
        "is missing: the requests of processes a reload left running were not counted)")
    (tmp_path / "master.sock").touch()
    broken = _master_drain(runtime, Master(clock, tmp_path / "master.sock", {}, broken=True), clock, "h1:main", 30,
                           tmp_path=tmp_path)
    assert broken["words"].endswith("(the processes a reload left running could not be read: HAProxy's runtime API "
                                    f"at {tmp_path / 'master.sock'} did not answer 'show': refused)")
    assert broken["waited_s"] == gateway.MASTER_GRACE_S  # asked again for a while, then the drain goes on
    # Without a master socket to read (the argument left out), nothing is said.
    assert _drain(runtime, clock, "h1:main", 30, tmp_path)["words"] == (
        "h1:main: drained, no request in flight (waited 0.0 s)")
