"""llama_gateway_backend in-process, on an in-memory HAProxy runtime API (the real one answers in
tests/integration/test_gateway_real.py): drain, put back, preview, refuse."""

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._converge import gateway
from ansible_collections.llamafleet.llamacpp.plugins.modules import llama_gateway_backend
from tests.unit.support.module_runner import run_module

H1 = {"host": "h1", "instance": "main"}
H2 = {"host": "h2", "instance": "main"}
NOBODY = {"host": "nobody", "instance": "main"}


class HAProxy:
    """The runtime API's answers to show stat and set server, from a table of server statuses."""

    def __init__(self, statuses):
        self.statuses = statuses  # (backend, server) -> status
        self.asked = []

    def ask(self, line):
        self.asked.append(line)
        if line == "show stat":
            rows = [f"{backend},{server},0,0,{status}" for (backend, server), status in self.statuses.items()]
            return "\n".join(["# pxname,svname,qcur,scur,status", *rows]) + "\n"
        target, what = line.removeprefix("set server ").split(" ", 1)
        backend, server = target.split("/")
        if what == "state drain":
            self.statuses[(backend, server)] = "DRAIN"
        elif what == "state ready":
            self.statuses[(backend, server)] = "UP"
        return ""


@pytest.fixture
def haproxy(monkeypatch, tmp_path):
    proxy = HAProxy({("model_m", "h1:main"): "UP", ("model_m", "h2:main"): "UP"})
    monkeypatch.setattr(gateway.RuntimeSocket, "ask", lambda api, line: proxy.ask(line))
    monkeypatch.setattr(gateway, "DRAIN_LOCK", str(tmp_path / "drain.lock"))
    monkeypatch.setattr(gateway, "DRAIN_TIMES", str(tmp_path / "drained.json"))
    return proxy


def _run(capsys, instances, state, check_mode=False, **more):
    return run_module(llama_gateway_backend.main, {"instances": instances, "state": state, **more}, capsys,
                      check_mode=check_mode)


def test_drain_then_back_in_rotation(haproxy, capsys):
    drained = _run(capsys, [H1, NOBODY], "drained", timeout_s=5)
    assert drained["changed"] is True
    assert [entry["words"].split(" (waited")[0] for entry in drained["servers"]] == [
        "h1:main: drained, no request in flight", "nobody:main: not in this gateway"]
    assert haproxy.statuses[("model_m", "h1:main")] == "DRAIN"
    assert _run(capsys, [H1], "drained")["changed"] is False
    back = _run(capsys, [H1], "ready")
    assert back["changed"] is True
    out_s = back["servers"][0]["out_s"]
    assert back["servers"][0]["words"] == f"h1:main: back in rotation after {out_s:.1f} s out of it"
    assert haproxy.asked[-2:] == ["set server model_m/h1:main health up", "set server model_m/h1:main state ready"]
    assert _run(capsys, [H1], "ready")["changed"] is False


@pytest.mark.parametrize(
    ("state", "words"),
    [("drained", ["h1:main: would be drained", "h2:main: drained already", "nobody:main: not in this gateway"]),
     ("ready", ["h1:main: in rotation", "h2:main: would be put back in rotation", "nobody:main: not in this gateway"])],
)
def test_check_mode_says_what_would_change_and_changes_nothing(haproxy, capsys, state, words):
    haproxy.statuses[("model_m", "h2:main")] = "DRAIN"
    before = dict(haproxy.statuses)
    result = _run(capsys, [H1, H2, NOBODY], state, check_mode=True)
    assert [entry["words"] for entry in result["servers"]] == words
    assert result["changed"] is True
    assert haproxy.statuses == before
    assert haproxy.asked == ["show stat"]


@pytest.mark.parametrize(
    ("instances", "more", "message"),
    [([H1], {"timeout_s": 86401}, "timeout_s=86401: a drain waits from 0 to 86400 seconds"),
     ([H1, {"host": "h2"}], {}, "instances[1]: give both host and instance")],
)
def test_a_request_it_cannot_take_is_refused_before_the_gateway_is_asked(haproxy, capsys, instances, more, message):
    result = _run(capsys, instances, "drained", **more)
    assert (result["failed"], result["msg"]) == (True, message)
    assert haproxy.asked == []


def test_a_gateway_that_does_not_answer_fails_with_what_was_done(haproxy, capsys, monkeypatch):
    del haproxy.statuses[("model_m", "h2:main")]
    haproxy.statuses[("model_n", "h2:main")] = "UP"  # another model: its drain does not wait for h1 to come back

    def ask(api, line):
        if line.startswith("set server model_n/h2:main"):
            raise gateway.GatewayError("HAProxy's runtime API did not answer 'set'")
        return haproxy.ask(line)

    monkeypatch.setattr(gateway.RuntimeSocket, "ask", ask)
    result = _run(capsys, [H1, H2], "drained", timeout_s=5)
    assert result["failed"] is True
    assert result["msg"] == "HAProxy's runtime API did not answer 'set'"
    assert [entry["server"] for entry in result["servers"]] == ["h1:main"]  # the drain done before stays reported
