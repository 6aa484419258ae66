"""One compose instance's files on the target, with a stand-in for the docker CLI: checked before they are
written, kept once verified, put back (or removed) on failure."""

import grp
import os
import pwd

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._converge.compose_instance import (
    ComposeApplyError,
    ComposeInstance,
)

ME = pwd.getpwuid(os.getuid()).pw_name
MY_GROUP = grp.getgrgid(os.getgid()).gr_name


class Docker:
    def __init__(self, config_rc=0, cmd='["-m", "/m/x.gguf"]'):
        self.calls, self.config_rc, self.cmd = [], config_rc, cmd

    def __call__(self, argv):
        self.calls.append(list(argv))
        if argv[1:2] == ["compose"]:
            return self.config_rc, "", "" if self.config_rc == 0 else "services.main.image: invalid"
        if argv[1:2] == ["inspect"]:
            return 0, self.cmd + "\n", ""
        if argv[1:2] == ["logs"]:
            return 0, "one\ntwo\n", ""
        return 0, "", ""


def params(tmp_path, content="services: {}\n", key="k-1"):
    return {
        "instance": "main", "compose_content": content, "compose_dir": str(tmp_path / "compose"),
        "project": "llamafleet", "container": "llama-server-main", "command": ["-m", "/m/x.gguf"],
        "key_file": str(tmp_path / "cred" / "main.key") if key else "", "key_content": f"{key}\n" if key else "",
        "stale_key_file": "" if key else str(tmp_path / "cred" / "main.key"), "api_key": key,
        "home_dir": str(tmp_path / "home"), "slot_dir": "", "slot_persist": False, "user": ME, "group": MY_GROUP,
        "health_url": "http://127.0.0.1:1/health", "expect": {}, "docker_cli": "docker",
        "last_good_dir": str(tmp_path / "last-good"), "state_file": str(tmp_path / "state.json"),
        "state_content": "{}\n", "log_lines": 5,
    }


def test_write_keep_change_and_restore(tmp_path):
    docker = Docker()
    first = ComposeInstance(params(tmp_path), docker)
    assert first.changed() == ["the compose file", "the API key"]
    first.write()
    assert first.changed() == []
    assert (tmp_path / "cred" / "main.key").stat().st_mode & 0o777 == 0o640
    assert any(call[1:2] == ["compose"] and call[-2:] == ["config", "--quiet"] for call in docker.calls)
    assert first.last_good_files() == {}
    first.keep_last_good()
    assert (tmp_path / "state.json").read_text() == "{}\n"
    second = ComposeInstance(params(tmp_path, content="services: {a: {}}\n"), docker)
    assert second.changed() == ["the compose file"]
    second.write()
    assert second.restore() == "restored"
    assert (tmp_path / "compose" / "main.yaml").read_text() == "services: {}\n"
    assert second.project_files() == ["main.yaml"]


def test_a_refused_file_is_never_written(tmp_path):
    service = ComposeInstance(params(tmp_path), Docker(config_rc=1))
    with pytest.raises(ComposeApplyError, match=r"docker compose config refused the compose file: services\.main"):
        service.write()
    assert not (tmp_path / "compose" / "main.yaml").exists()


def test_a_new_instance_is_removed_and_a_stale_key_goes(tmp_path):
    service = ComposeInstance(params(tmp_path), Docker())
    service.write()
    assert service.restore() == "removed"
    assert not (tmp_path / "compose" / "main.yaml").exists()
    assert not (tmp_path / "cred" / "main.key").exists()
    (tmp_path / "cred" / "main.key").write_text("old\n")
    keyless = ComposeInstance(params(tmp_path, key=""), Docker())
    assert "(no longer used)" in keyless.changed()[-1]
    keyless.write()
    assert not (tmp_path / "cred" / "main.key").exists()


def test_a_file_deployed_before_verified_copies_is_the_fallback(tmp_path):
    (tmp_path / "compose").mkdir()
    (tmp_path / "compose" / "main.yaml").write_text("services: {old: {}}\n")
    service = ComposeInstance(params(tmp_path), Docker())
    assert service.is_new() is False
    assert service.diff()["before"] == "services: {old: {}}\n"
    service.write()
    assert service.restore() == "restored"
    assert (tmp_path / "compose" / "main.yaml").read_text() == "services: {old: {}}\n"
    assert ComposeInstance(params(tmp_path / "fresh"), Docker()).is_new() is True


def test_what_runs_is_read_from_the_container(tmp_path):
    service = ComposeInstance(params(tmp_path), Docker(cmd='["-m", "/m/other.gguf"]'))
    report, props = service.observe()
    assert (report["health"] != 200, report["runs_plan"], props) == (True, False, None)
    assert "does not run the planned command" in service.verify({"default_generation_settings": {}}, False)[0]
    assert service.logs() == ["one", "two"]
