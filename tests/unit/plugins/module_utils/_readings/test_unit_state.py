"""What systemd and /proc say of a unit (unit_state.py): ``systemctl show``, and the main process's cmdline,
environ and maps."""

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._readings.unit_state import (
    parse_cmdline,
    parse_deleted_maps,
    parse_environ,
    parse_show,
    unit_state,
)
from tests.unit.plugins.module_utils._judgements.test_running_state import MAPS

SHOW = """LoadState=loaded
ActiveState=active
SubState=running
Result=success
MainPID=616
NeedDaemonReload=no
UnitFileState=enabled
NRestarts=0
"""


def test_parse_show():
    state = unit_state(parse_show(SHOW))
    assert (state.loaded, state.running, state.main_pid, state.need_daemon_reload) == (True, True, 616, False)
    assert state.as_dict()["unit_file_state"] == "enabled"
    assert unit_state(parse_show("garbage\nMainPID=x")).main_pid == 0


def test_proc_entries():
    assert parse_cmdline(b"/e\0-m\0a b\0") == ("/e", "-m", "a b")
    assert parse_cmdline(b"") == ()
    assert parse_environ(b"A=1\0B=x=y\0\0junk\0") == {"A": "1", "B": "x=y"}


def test_deleted_maps():
    assert parse_deleted_maps(MAPS) == ("/var/lib/llamafleet/models/gemma.gguf",)
    assert parse_deleted_maps("") == ()
