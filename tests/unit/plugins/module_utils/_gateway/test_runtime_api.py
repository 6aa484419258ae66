"""The runtime API's answers and the drain decisions (runtime_api.py)."""

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._gateway import runtime_api

# Captured from HAProxy 2.6.12 (Debian bookworm), `show stat`, first columns only.
STAT = """# pxname,svname,qcur,qmax,scur,smax,slim,stot,status
llamafleet,FRONTEND,,,1,3,4096,40,OPEN
model_gemma,h1:main,0,0,2,2,2,17,UP
model_gemma,h2:main,1,1,0,2,2,9,DRAIN
model_gemma,BACKEND,0,0,2,2,410,26,UP
model_qwen,h1:qwen,0,0,0,1,1,3,DOWN
model_qwen,h2:qwen,0,0,0,1,1,3,MAINT (via model_qwen/h1:qwen)
"""


def test_parse_stat():
    states = runtime_api.parse_stat(STAT)
    assert [(s.backend, s.server, s.status, s.in_flight, s.queued) for s in states] == [
        ("model_gemma", "h1:main", "UP", 2, 0), ("model_gemma", "h2:main", "DRAIN", 0, 1),
        ("model_qwen", "h1:qwen", "DOWN", 0, 0), ("model_qwen", "h2:qwen", "MAINT (via model_qwen/h1:qwen)", 0, 0)]
    assert [s.serving for s in states] == [True, False, False, False]
    assert [s.held_out for s in states] == [False, True, False, True]


@pytest.mark.parametrize("text", ["", "Unknown command\n", "pxname,svname\n"])
def test_parse_stat_refuses_other_answers(text):
    with pytest.raises(ValueError, match="not the answer of show stat"):
        runtime_api.parse_stat(text)


@pytest.mark.parametrize(
    ("action", "backend", "server", "line"),
    [("drain", "model_gemma", "h1:main", "set server model_gemma/h1:main state drain"),
     ("ready", "model_gemma", "h1:main", "set server model_gemma/h1:main state ready"),
     ("up", "model_gemma", "h1:main", "set server model_gemma/h1:main health up"),
     ("drain", "model_gemma", "h1:main\nshutdown sessions", None), ("drain", "model gemma", "h1", None),
     ("drain", "model_gemma", "h1;show", None), ("stop", "model_gemma", "h1", None)],
)
def test_command(action, backend, server, line):
    if line is None:
        with pytest.raises(ValueError, match=r"not a HAProxy proxy or server name|unknown action"):
            runtime_api.command(action, backend, server)
    else:
        assert runtime_api.command(action, backend, server) == line


def _state(server, status, backend="model_gemma"):
    return runtime_api.ServerState(backend=backend, server=server, status=status, in_flight=0, queued=0)


@pytest.mark.parametrize(
    ("others", "may"),
    [
        ([], True),  # a single replica: its requests wait in the gateway
        (["UP"], True),
        (["UP 1/2"], True),  # going down, still serving
        (["DRAIN"], False),  # another rollout holds the only other replica out: wait for it
        (["MAINT"], False),
        (["DRAIN", "UP"], True),
        (["DOWN"], True),  # down by its checks: it could not serve anyway
        (["DOWN", "DRAIN"], False),
        (["no check"], True),
    ],
)
def test_may_drain(others, may):
    target = _state("h0:main", "UP")
    states = [target] + [_state(f"h{i + 1}:main", status) for i, status in enumerate(others)]
    states.append(_state("x:qwen", "DRAIN", backend="model_qwen"))  # another model does not count
    allowed, why = runtime_api.may_drain(states, target)
    assert allowed is may
    assert (why == "") is may


def test_find_and_words():
    states = runtime_api.parse_stat(STAT)
    assert [s.backend for s in runtime_api.find(states, "h1:main")] == ["model_gemma"]
    assert runtime_api.find(states, "nobody") == []
    assert "waited 1.5 s" in runtime_api.drained_words("h1:main", 1.5, 0, 300)
    assert "2 request(s) still in flight after the drain timeout (300 s)" in runtime_api.drained_words(
        "h1:main", 300, 2, 300)


@pytest.mark.parametrize(
    ("instances", "timeout_s", "names", "refused"),
    [
        ([{"host": "h1", "instance": "main"}, {"host": "h 2", "instance": "x"}], 300, ["h1:main", None], ""),
        ([], 0, [], ""),
        ([{"host": "h1", "instance": "main"}], 86401, [], "timeout_s=86401: a drain waits from 0 to 86400 seconds"),
        ([{"host": "h1", "instance": "main"}], -1, [], "timeout_s=-1: a drain waits from 0 to 86400 seconds"),
        ([{"host": "h1", "instance": "main"}, {"host": "h2"}], 300, [], "instances[1]: give both host and instance"),
    ],
)
def test_server_names(instances, timeout_s, names, refused):
    found, why = runtime_api.server_names(instances, timeout_s)
    assert why == refused
    assert len(found) == len(names)
    for name, expected in zip(found, names, strict=True):
        assert name == expected if expected else name.startswith("h_2:x-")  # as the configuration names it


@pytest.mark.parametrize(
    ("server", "state", "changed", "words"),
    [
        ("h1:main", "drained", True, "h1:main: would be drained"),
        ("h2:main", "drained", False, "h2:main: drained already"),
        ("h1:main", "ready", False, "h1:main: in rotation"),
        ("h2:main", "ready", True, "h2:main: would be put back in rotation"),
        ("h1:qwen", "ready", True, "h1:qwen: would be put back in rotation"),  # down by its checks
        ("h9:main", "drained", False, "h9:main: not in this gateway"),
    ],
)
def test_preview(server, state, changed, words):
    assert runtime_api.preview(runtime_api.parse_stat(STAT), server, state) == {
        "server": server, "changed": changed, "words": words}


# Captured from HAProxy 2.6.12 (Debian bookworm), the master CLI's `show proc` one second after a reload, while the
# old worker still held a stream.
# (HAProxy pads the heading line with spaces.)
SHOW_PROC = "#<PID>          <type>          <reloads>       <uptime>        <version>" + " " * 6 + """
24330           master          1 [failed: 0]   0d00h00m03s     2.6.12-1+deb12u4
# workers
24343           worker          0               0d00h00m01s     2.6.12-1+deb12u4
# old workers
24333           worker          1               0d00h00m03s     2.6.12-1+deb12u4
# programs

"""


# The same from HAProxy 3.0.11 (Debian trixie).
SHOW_PROC_3_0 = "#<PID>          <type>          <reloads>       <uptime>        <version>" + " " * 6 + """
10345           master          1 [failed: 0]   0d00h00m04s     3.0.11-1+deb13u4
# workers
10442           worker          0               0d00h00m01s     3.0.11-1+deb13u4
# old workers
10386           worker          1               0d00h00m03s     3.0.11-1+deb13u4
# programs

"""


@pytest.mark.parametrize(
    ("text", "pids"),
    [
        (SHOW_PROC, [24333]),
        (SHOW_PROC_3_0, [10386]),
        # No reload pending: no old worker.
        (SHOW_PROC.replace("24333           worker          1               0d00h00m03s     2.6.12-1+deb12u4\n", ""),
         []),
        # Two reloads in a row, both old workers still finishing; a program section after them is not a worker.
        (SHOW_PROC.replace("# programs\n", "24321           worker          2               0d00h00m09s     2.6.12\n"
                           "# programs\n4242            program         0               0d00h00m09s     -\n"),
         [24333, 24321]),
    ],
    ids=["one old worker", "HAProxy 3.0", "none", "two, and a program"],
)
def test_old_workers(text, pids):
    assert runtime_api.old_workers(text) == pids


@pytest.mark.parametrize("text", ["", "Unknown command, but maybe one of the following ones is a better match:\n"])
def test_old_workers_refuses_other_answers(text):
    with pytest.raises(ValueError, match="not the answer of show proc"):
        runtime_api.old_workers(text)


@pytest.mark.parametrize(("pid", "line"), [(24333, "@!24333 show stat"), (0, None), (-3, None), ("24333", None),
                                           (True, None)])
def test_in_worker(pid, line):
    if line is None:
        with pytest.raises(ValueError, match="is not a process id"):
            runtime_api.in_worker(pid, "show stat")
    else:
        assert runtime_api.in_worker(pid, "show stat") == line


def test_worker_gone_and_unseen_words():
    # Captured from HAProxy 2.6.12: the master's answer for a worker that has exited.
    assert runtime_api.worker_gone("Can't find the target PID matching the prefix '@!999999'\n")
    assert not runtime_api.worker_gone(STAT)
    assert runtime_api.drained_words("h1:main", 0.25, 0, 300, "no master socket") == (
        "h1:main: drained, no request in flight (waited 0.2 s) (no master socket)")
