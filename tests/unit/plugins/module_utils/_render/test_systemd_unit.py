"""The unit file of one instance (systemd_unit.py): what each decision writes, and what it refuses."""

import dataclasses

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.engine_inputs import (
    NO_CONFIG_HOME,
    SYSTEM_CONFIG_DIR,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.notes import Note
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._render.systemd_unit import (
    UnitRenderError,
    UnitSpec,
    render_unit,
)

BASE = UnitSpec(
    instance="main",
    argv=["/opt/e/llama-server", "-m", "/m/a b.gguf", "-c", "4096", "--port", "8080"],
    user="llamafleet",
    group="llamafleet",
    home_dir="/var/lib/llamafleet/instances/main",
)


def lines(spec):
    return render_unit(spec).splitlines()


@pytest.mark.parametrize(
    ("change", "present", "absent"),
    [
        ({}, ["Type=exec", "User=llamafleet", "KillSignal=SIGINT", "RestartPreventExitStatus=78", "PrivateDevices=yes",
              "MemoryDenyWriteExecute=yes", "RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6",
              "ReadWritePaths=/var/lib/llamafleet/instances/main", "WantedBy=multi-user.target"],
         ["EnvironmentFile=", "LoadCredential=", "ExecStartPre=", "IPAddressDeny=any", "UnsetEnvironment=",
          "DeviceAllow=char-nvidia* rw"]),
        ({"nvidia": True}, ["PrivateDevices=no", "DeviceAllow=char-nvidia* rw",
                            "RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6 AF_NETLINK"],
         ["PrivateDevices=yes", "MemoryDenyWriteExecute=yes"]),
        ({"loopback_only": True}, ["IPAddressDeny=any", "IPAddressAllow=localhost"], []),
        ({"key_file": "/etc/llamafleet/credentials/main.key"},
         ["LoadCredential=api_key:/etc/llamafleet/credentials/main.key"], ["EnvironmentFile="]),
        ({"env_file": "/etc/llamafleet/credentials/main.env", "key_file": "/k"},
         ["EnvironmentFile=/etc/llamafleet/credentials/main.env"], ["LoadCredential="]),
        ({"unset_environment": ("LLAMA_ARG_CTX_SIZE", "GGML_X")}, ["UnsetEnvironment=LLAMA_ARG_CTX_SIZE GGML_X"], []),
        ({"environment": {"CUDA_VISIBLE_DEVICES": "0,1", "GGML_X": "a b"}},
         ['Environment="CUDA_VISIBLE_DEVICES=0,1"', 'Environment="GGML_X=a b"'], []),
        ({"stop_timeout_s": 90, "restart_sec": 7, "limit_nofile": 1024, "protect_home": "read-only"},
         ["TimeoutStopSec=90", "RestartSec=7", "LimitNOFILE=1024", "ProtectHome=read-only"], []),
        ({"notes": [Note("ctx.x", "two\n  lines")], "warnings": [Note("load.warn", "w")]},
         ["# [ctx.x] two lines", "# warning [load.warn] w"], []),
    ],
)
def test_each_decision_writes_its_lines(change, present, absent):
    got = lines(dataclasses.replace(BASE, **change))
    for line in present:
        assert line in got
    for line in absent:
        assert not any(g.startswith(line) for g in got), line


def test_the_command_line_is_quoted_for_systemd():
    assert 'ExecStart=/opt/e/llama-server -m "/m/a b.gguf" -c 4096 --port 8080' in lines(BASE)


@pytest.mark.parametrize(("persist", "flag", "kept"), [(False, "0", ""), (True, "1", " (persist-* states kept")])
def test_the_slot_directory_is_made_and_emptied_before_the_start(persist, flag, kept):
    got = render_unit(dataclasses.replace(BASE, slot_dir="/var/lib/l/slots", slot_persist=persist))
    pre = [line for line in got.splitlines() if line.startswith("ExecStartPre=")]
    assert len(pre) == 1
    assert pre[0].startswith("ExecStartPre=/bin/sh -c ")
    assert pre[0].endswith(f" llamafleet-slots /var/lib/l/slots {flag}")
    assert f"emptied at each start{kept}" in got


def test_no_config_ini_reaches_the_engine():
    got = lines(BASE)
    assert f'Environment="XDG_CONFIG_HOME={NO_CONFIG_HOME}"' in got
    assert f"InaccessiblePaths=-{SYSTEM_CONFIG_DIR}" in got


def test_two_renders_are_byte_identical_and_end_with_a_newline():
    assert render_unit(BASE) == render_unit(dataclasses.replace(BASE))
    assert render_unit(BASE).endswith("WantedBy=multi-user.target\n")


@pytest.mark.parametrize(
    "change",
    [
        {"argv": ["relative/llama-server"]},
        {"argv": ["/e", "-m", "a\0b"]},
        {"environment": {"X": "a\0b"}},
        {"environment": {"BAD NAME": "x"}},
        {"instance": "a\nb"},
        {"instance": "../../tmp/evil"},
        {"home_dir": "/a\nb"},
        {"home_dir": '/var/lib/llamafleet\rExecStartPre=+/bin/sh -c "id > /run/pwned"\r#'},
        {"home_dir": "\t/srv/llama"},
        {"home_dir": "/srv/llama\\"},
        {"home_dir": "/srv/../etc"},
        {"user": "llama\\"},
        {"group": "llama\rExecStartPre=/bin/sh"},
        {"user": "%Z"},
        {"key_file": "/etc/cred/main key"},
        {"env_file": "/etc/cred/x\ny"},
        {"argv": ["/e", "-m", "a" * (300 * 1024)]},
        {"argv": ["/e", "-m", "\udcff.gguf"]},
    ],
)
def test_a_value_that_would_break_the_unit_is_refused(change):
    with pytest.raises(UnitRenderError, match="instance"):
        render_unit(dataclasses.replace(BASE, **change))


def test_a_percent_in_a_path_is_written_as_systemd_reads_it_back():
    got = lines(dataclasses.replace(BASE, home_dir="/srv/llama%Z"))
    assert "WorkingDirectory=/srv/llama%%Z" in got
    assert "ReadWritePaths=/srv/llama%%Z" in got


def test_a_comment_holds_one_line_whatever_the_note_says():
    got = render_unit(dataclasses.replace(BASE, notes=[Note("x\ny", "a\rExecStartPre=/bin/sh\\")]))
    assert "# [x y] a ExecStartPre=/bin/sh\\." in got.splitlines()
    assert not any(line.startswith("ExecStartPre=/bin/sh") for line in got.splitlines())


def test_a_newline_in_a_value_is_escaped_not_written():
    got = render_unit(dataclasses.replace(BASE, argv=["/e", "-m", "a\nb"], environment={"X": "a\nb"}))
    assert 'ExecStart=/e -m "a\\nb"' in got.splitlines()
    assert 'Environment="X=a\\nb"' in got.splitlines()
