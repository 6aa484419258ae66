"""rotate_all (_converge/gateway.py): llama_gateway_backend's result from rotate, table-driven on an in-memory
runtime API: ``changed`` over the servers, and a GatewayError that stops the rotation keeps what was done."""

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._converge import gateway
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._gateway.runtime_api import ServerState


class Runtime:
    """Servers of one backend, by status; ``refuse`` names a server whose set commands fail."""

    def __init__(self, statuses, refuse=""):
        self.statuses = dict(statuses)
        self.refuse = refuse
        self.sent = []

    def states(self):
        return [ServerState(backend="model_m", server=name, status=status, in_flight=0, queued=0)
                for name, status in self.statuses.items()]

    def act(self, action, state):
        if state.server == self.refuse:
            raise gateway.GatewayError(f"HAProxy refused to {action} model_m/{state.server}: no")
        self.sent.append((action, state.server))
        self.statuses[state.server] = {"drain": "DRAIN", "ready": "UP", "up": self.statuses[state.server]}[action]


CASES = [
    # name, statuses, refused server, servers, state, check mode -> changed (None: failed), words, failure
    ("back in rotation", {"a": "DRAIN", "b": "UP"}, "", ["a", "b", "c"], "ready", False,
     True, ["a: back in rotation", "b: in rotation", "c: not in this gateway"], ""),
    ("nothing to put back", {"a": "UP"}, "", ["a"], "ready", False, False, ["a: in rotation"], ""),
    ("no server at all", {"a": "UP"}, "", [], "ready", False, False, [], ""),
    ("drained already", {"a": "DRAIN"}, "", ["a"], "drained", False, False, ["a: drained, no request in flight"],
     ""),
    ("a preview in check mode", {"a": "UP", "b": "DRAIN"}, "a", ["a", "b"], "drained", True,
     True, ["a: would be drained", "b: drained already"], ""),
    ("a refusal stops the rotation, keeping what was done", {"a": "DRAIN", "b": "DRAIN", "c": "DRAIN"}, "b",
     ["a", "b", "c"], "ready", False, None, ["a: back in rotation"], "HAProxy refused to up model_m/b: no"),
]


@pytest.mark.parametrize("case", CASES, ids=[case[0] for case in CASES])
def test_rotate_all(tmp_path, monkeypatch, case):
    _name, statuses, refuse, servers, state, check_mode, changed, words, failure = case
    monkeypatch.setattr(gateway, "DRAIN_LOCK", str(tmp_path / "drain.lock"))
    monkeypatch.setattr(gateway, "DRAIN_TIMES", str(tmp_path / "drained.json"))
    runtime = Runtime(statuses, refuse)
    result, why = gateway.rotate_all(runtime, servers, state, 0, check_mode)
    assert why == failure
    assert [entry["words"].split(" (waited")[0] for entry in result["servers"]] == words
    if changed is None:
        assert "changed" not in result
    else:
        assert result["changed"] is changed
    if check_mode:
        assert runtime.sent == []
