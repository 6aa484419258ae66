"""Whether an instance must restart, from what runs (running_state.py).

The ``systemctl show`` texts are in the form systemd 252 (Debian bookworm) prints them on the local fleet.
"""

import dataclasses

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._judgements.running_state import (
    argv_matches,
    container_reasons,
    environment_differences,
    first_difference,
    restart_reasons,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._readings.unit_state import (
    UnitState,
)

ARGV = ("/opt/e/llama-server", "-m", "/m/a.gguf", "-c", "4096", "--port", "8080")
ENV = {"XDG_CONFIG_HOME": "/tmp/llamafleet-no-config", "CUDA_VISIBLE_DEVICES": "0"}
RUNNING = UnitState(load_state="loaded", active_state="active", sub_state="running", result="success",
                    main_pid=616, unit_file_state="enabled", cmdline=ARGV,
                    environ={**ENV, "PATH": "/usr/bin", "INVOCATION_ID": "x", "LANG": "C.UTF-8"})


@pytest.mark.parametrize(
    ("running", "planned", "matches"),
    [
        (ARGV, ARGV, True),
        (("/bin/sh", *ARGV), ARGV, True),  # a script engine under its interpreter
        (("/usr/bin/python3", "-u", *ARGV), ARGV, True),
        (("/a", "/b", "/c", *ARGV), ARGV, False),  # more than an interpreter and one option
        (ARGV[:-1], ARGV, False),
        ((), ARGV, False),
        ((), (), True),
    ],
)
def test_argv_matches(running, planned, matches):
    assert argv_matches(running, planned) is matches


def test_first_difference_names_the_word():
    changed = (*ARGV[:4], "2048", *ARGV[5:])
    assert first_difference(changed, ARGV) == "word 4 is '2048', the plan has '4096'"
    assert first_difference(ARGV[:3], ARGV) == "it has 3 words, the plan 7"
    assert first_difference(ARGV, ARGV) == "they are equal"


@pytest.mark.parametrize(
    ("running", "differing"),
    [
        ({**ENV, "PATH": "/bin"}, []),
        ({**ENV, "CUDA_VISIBLE_DEVICES": "1"}, ["CUDA_VISIBLE_DEVICES"]),
        ({"XDG_CONFIG_HOME": "/tmp/llamafleet-no-config"}, ["CUDA_VISIBLE_DEVICES"]),
        ({**ENV, "LLAMA_ARG_CTX_SIZE": "8"}, ["LLAMA_ARG_CTX_SIZE"]),  # an engine variable the unit does not set
        ({**ENV, "LLAMA_API_KEY": "secret"}, []),  # from the unit's EnvironmentFile=
        ({**ENV, "OTHER": "x"}, []),  # not an engine variable
    ],
)
def test_environment_differences_name_variables_only(running, differing):
    assert environment_differences(running, ENV) == differing


@pytest.mark.parametrize(
    ("change", "files", "reasons"),
    [
        ({}, (), []),
        ({}, ("the unit file",), ["the unit file changed"]),
        ({"load_state": "not-found", "active_state": "inactive", "main_pid": 0}, (), ["the unit is not loaded yet"]),
        ({"need_daemon_reload": True}, (), ["systemd still holds an older copy of the unit (NeedDaemonReload)"]),
        ({"active_state": "failed", "sub_state": "failed", "result": "start-limit-hit", "main_pid": 0}, (),
         ["the unit hit its start limit (start-limit-hit)", "the engine is not running (failed/failed)"]),
        ({"active_state": "failed", "sub_state": "failed", "result": "exit-code", "main_pid": 0}, (),
         ["the unit failed (exit-code)", "the engine is not running (failed/failed)"]),
        ({"active_state": "activating", "sub_state": "auto-restart", "main_pid": 0}, (),
         ["the engine is not running (activating/auto-restart)"]),
        ({"active_state": "inactive", "sub_state": "dead", "main_pid": 0}, (),
         ["the engine is not running (inactive/dead)"]),
        ({"cmdline": (*ARGV[:4], "2048", *ARGV[5:])}, (),
         ["the running engine's command line is not the plan's: word 4 is '2048', the plan has '4096'"]),
        ({"environ": {**ENV, "GGML_X": "1"}}, (), ["the running engine's environment is not the plan's: GGML_X"]),
        ({"environ": None}, (), []),  # unreadable: judged by argv alone
        ({"active_state": "activating", "sub_state": "start"}, (), []),  # Type=exec while starting
    ],
)
def test_restart_reasons(change, files, reasons):
    state = dataclasses.replace(RUNNING, **change)
    assert restart_reasons(state, ARGV, ENV, files) == reasons


# Lines in the form of /proc/<pid>/maps (Linux 6.x): address, perms, offset, dev, inode, path.
MAPS = """55d0c0a00000-55d0c0a80000 r--p 00000000 00:2a 1234 /opt/e/llama-server
7f0000000000-7f0010000000 r--s 00000000 00:2a 5678 /var/lib/llamafleet/models/gemma.gguf (deleted)
7f0010000000-7f0010100000 r--s 00100000 00:2a 5678 /var/lib/llamafleet/models/gemma.gguf (deleted)
7f0020000000-7f0020001000 rw-s 00000000 00:01 99 /memfd:x (deleted)
7f0030000000-7f0030021000 rw-p 00000000 00:00 0
7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0 [stack]
"""


def test_an_engine_mapping_a_replaced_model_is_restarted():
    state = dataclasses.replace(RUNNING, deleted_maps=("/var/lib/llamafleet/models/gemma.gguf", "/tmp/x.so"))
    assert restart_reasons(state, ARGV, ENV) == [
        "the engine still maps a model file that was replaced on disk: /var/lib/llamafleet/models/gemma.gguf"]


CONTAINER = UnitState(load_state="loaded", active_state="active", sub_state="running", main_pid=4242,
                      cmdline=ARGV[1:], environ={**ENV, "LLAMA_ARG_HOST": "0.0.0.0", "PATH": "/usr/bin"})


@pytest.mark.parametrize(
    ("change", "files", "reasons"),
    [
        ({}, (), []),  # the image's own variables (LLAMA_ARG_HOST here) are not the plan's business
        ({}, ("the compose file",), ["the compose file changed"]),
        ({"load_state": "not-found", "active_state": "", "main_pid": 0}, ("the compose file",),
         ["the compose file changed", "the container does not exist yet"]),
        ({"active_state": "failed", "sub_state": "exited", "main_pid": 0}, (),
         ["the container is not running (exited)"]),
        ({"active_state": "activating", "sub_state": "restarting", "main_pid": 0}, (),
         ["the container is not running (restarting)"]),
        ({"cmdline": ("/opt/e/llama-server", *ARGV[1:])}, (),  # no interpreter words before a container's command
         ["the running engine's command line is not the plan's: word 0 is '/opt/e/llama-server', the plan has '-m'"]),
        ({"environ": {"PATH": "/usr/bin"}}, (),
         ["the running engine's environment is not the plan's: XDG_CONFIG_HOME, CUDA_VISIBLE_DEVICES"]),
        ({"deleted_maps": ("/m/a.gguf",)}, (),
         ["the engine still maps a model file that was replaced on disk: /m/a.gguf"]),
    ],
    ids=["runs the plan", "file", "no container", "exited", "restarting", "command", "environment", "model"],
)
def test_container_reasons(change, files, reasons):
    state = dataclasses.replace(CONTAINER, **change)
    assert container_reasons(state, ARGV[1:], ENV, files) == reasons
