"""The compose runtime of the instance step (compose.py), on a stand-in docker CLI (tests/unit/support).

The same step as systemd's: a first deployment and a no-op, comments only, a container that stopped, a key that
changed, a file compose refuses, a failed start rolled back or removed, state absent; the real Docker engine
and compose v2 are in the molecule compose scenario.
"""

import json

import pytest
import yaml

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._converge import instance
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._converge.compose import (
    container_state,
    docker_environment,
)
from tests.unit.support.instance_host import Docker, preset, settings_for

KEY = "k-compose-secret"


@pytest.fixture
def docker(tmp_path, monkeypatch):
    return Docker(tmp_path, monkeypatch)


def apply(docker, tmp_path, ctx="4096", *, key=KEY, check_mode=False, **more):
    params = {"name": "main", "preset": preset(ctx), "engine": "", "api_key": key,
              "settings": settings_for(tmp_path, **{"runtime": "compose", "image": Docker.IMAGE, **more})}
    outcome = instance.apply(params, docker.run, docker.run, check_mode=check_mode, diff=True)
    return {**outcome.result, "failure": outcome.failure}


def compose_file(tmp_path):
    return tmp_path / "compose" / "main.yaml"


def test_first_deployment_then_a_no_op(docker, tmp_path):
    first = apply(docker, tmp_path)
    assert (first["state"], first["restarted"], first["runs_plan"], first["failure"]) == ("deployed", True, True, "")
    assert first["reasons"] == ["the compose file changed", "the API key changed",
                                "the container does not exist yet"]
    service = yaml.safe_load(compose_file(tmp_path).read_text())["services"]["main"]
    assert service["command"][:4] == ["-m", "/m/a.gguf", "-c", "4096"]
    assert service["labels"]["io.llamafleet.image-id"] == "sha256:1111"
    assert (tmp_path / "etc" / "cred" / "main.key").stat().st_mode & 0o777 == 0o640
    assert docker.verbs() == ["image", "container", "compose config", "container", "compose up", "container",
                              "container"]
    docker.calls.clear()
    again = apply(docker, tmp_path)
    assert (again["changed"], again["restarted"], again["reasons"]) == (False, False, [])
    assert "compose up" not in docker.verbs()
    assert KEY not in json.dumps(first) + json.dumps(again)


def test_a_change_of_comments_only_is_written_and_recreates_nothing(docker, tmp_path):
    # "4k" is read as 4096: the same command, and a note that says so in the file's comments.
    apply(docker, tmp_path, ctx="4k")
    assert "# [preset.normalised] CTX=4k read as 4096" in compose_file(tmp_path).read_text()
    container = docker.container()["Id"]
    docker.calls.clear()
    result = apply(docker, tmp_path, ctx="4096")
    assert (result["changed"], result["restarted"], result["rewritten"]) == (True, False, ["the compose file"])
    assert "preset.normalised" not in compose_file(tmp_path).read_text()
    assert docker.container()["Id"] == container
    assert "compose up" not in docker.verbs()
    assert "compose config" not in docker.verbs()


def test_a_file_of_another_form_is_written_and_compose_keeps_the_container(docker, tmp_path):
    """An upgrade of the collection may write the same service in another form: compose reads it as the one that
    runs, so the container (and its slots) stay."""
    apply(docker, tmp_path)
    container = docker.container()["Id"]
    path = compose_file(tmp_path)
    path.write_text(yaml.safe_dump(yaml.safe_load(path.read_text()), default_flow_style=True))
    docker.calls.clear()
    result = apply(docker, tmp_path)
    assert (result["changed"], result["restarted"], result["reasons"], result["rewritten"]) == (
        True, False, [], ["the compose file"])
    assert docker.container()["Id"] == container
    up = next(call for call in docker.calls if "up" in call)
    assert "--force-recreate" not in up
    assert not any(call[0] != "docker" for call in docker.calls)  # the slots were not emptied


def test_a_setting_only_the_compose_file_holds_recreates_the_container(docker, tmp_path):
    apply(docker, tmp_path)
    container = docker.container()["Id"]
    result = apply(docker, tmp_path, stop_timeout_s=90)
    assert (result["restarted"], result["reasons"]) == (True, ["the compose file changed"])
    assert docker.container()["Id"] != container
    assert yaml.safe_load(compose_file(tmp_path).read_text())["services"]["main"]["stop_grace_period"] == "90s"


def test_what_runs_decides(docker, tmp_path):
    apply(docker, tmp_path)
    docker.container()["State"].update(Status="exited", Running=False, Pid=0, ExitCode=137)
    stopped = apply(docker, tmp_path)
    assert (stopped["restarted"], stopped["reasons"]) == (True, ["the container is not running (exited)"])
    docker.container()["Config"]["Cmd"][3] = "2048"
    edited = apply(docker, tmp_path)
    assert edited["reasons"] == ["the running engine's command line is not the plan's: word 3 is '2048', the plan "
                                 "has '4096'"]


def test_a_new_key_recreates_the_container(docker, tmp_path):
    apply(docker, tmp_path)
    container = docker.container()["Id"]
    result = apply(docker, tmp_path, key="k-compose-other")
    assert (result["restarted"], result["reasons"]) == (True, ["the API key changed"])
    assert docker.container()["Id"] != container


def test_a_file_compose_refuses_changes_nothing(docker, tmp_path):
    apply(docker, tmp_path)
    before = compose_file(tmp_path).read_text()
    docker.config_refuses = "services.main.command must be a list"
    result = apply(docker, tmp_path, ctx="2048")
    assert result["failure"] == ("instance main: docker compose config refused the compose file: "
                                 "services.main.command must be a list (nothing was changed)")
    assert compose_file(tmp_path).read_text() == before
    assert not list((tmp_path / "compose").glob(".check-*"))


def test_a_failed_start_goes_back_to_the_last_verified_file(docker, tmp_path):
    apply(docker, tmp_path)
    verified = compose_file(tmp_path).read_text()
    docker.crash_when = lambda command: "1024" in command
    result = apply(docker, tmp_path, ctx="1024")
    assert result["rolled_back"] is True
    assert result["report"]["state"] == "failed"
    assert "rolled back to the last verified compose file, whose container is healthy again" in result["failure"]
    assert "docker logs llama-server-main (last 2 lines):" in result["failure"]
    assert compose_file(tmp_path).read_text() == verified
    assert docker.running()
    assert "4096" in docker.container()["Config"]["Cmd"]


def test_a_new_instance_that_never_worked_is_removed(docker, tmp_path):
    docker.crash_when = lambda command: True
    result = apply(docker, tmp_path)
    assert "the new instance was removed" in result["failure"]
    assert docker.container() is None
    assert not compose_file(tmp_path).exists()
    assert not (tmp_path / "etc" / "cred" / "main.key").exists()


def test_check_mode_previews_and_changes_nothing(docker, tmp_path):
    result = apply(docker, tmp_path, check_mode=True)
    assert (result["state"], result["would_restart"]) == ("previewed", True)
    assert '"-m"' in result["diff"]["after"]
    assert not compose_file(tmp_path).exists()
    assert docker.container() is None


def test_an_image_that_is_not_there_fails_before_anything_changes(docker, tmp_path):
    docker.image_id = ""
    result = apply(docker, tmp_path, image="llama:missing")
    assert result["failure"].startswith("instance main: the plan cannot be written into its compose files: image "
                                        "llama:missing is not on this host")
    assert not compose_file(tmp_path).exists()


def test_state_absent_removes_the_container_and_its_files(docker, tmp_path):
    apply(docker, tmp_path)
    params = {"name": "main", "state": "absent", "settings": settings_for(tmp_path, runtime="compose")}
    gone = instance.apply(params, docker.run, docker.run, check_mode=False, diff=False).result
    assert gone["report"] == {"instance": "main", "unit": "llama-server-main", "state": "absent", "changed": True,
                              "restarted": False}
    assert docker.container() is None
    assert not compose_file(tmp_path).exists()
    again = instance.apply(params, docker.run, docker.run, check_mode=False, diff=False).result
    assert again["changed"] is False


def test_state_stopped_stops_the_container_keeps_it_and_its_files_and_present_recreates_it(docker, tmp_path):
    apply(docker, tmp_path)
    file_text = compose_file(tmp_path).read_text()
    params = {"name": "main", "state": "stopped", "settings": settings_for(tmp_path, runtime="compose")}
    docker.calls.clear()
    stopped = instance.apply(params, docker.run, docker.run, check_mode=False, diff=False).result
    assert stopped["report"] == {"instance": "main", "unit": "llama-server-main", "state": "stopped", "changed": True,
                                 "restarted": False}
    assert [call[1] for call in docker.calls if call[1] in ("stop", "rm")] == ["stop"]
    assert docker.container() is not None
    assert not docker.running()
    assert compose_file(tmp_path).read_text() == file_text
    entry, why = instance.judge_stopped("main", settings_for(tmp_path, runtime="compose"), docker.run, docker.run)
    assert (entry["state"], why) == ("stopped", "")
    again = instance.apply(params, docker.run, docker.run, check_mode=False, diff=False).result
    assert again["changed"] is False
    back = apply(docker, tmp_path)
    assert (back["state"], back["restarted"], back["was_running"]) == ("deployed", True, False)
    assert docker.running()


@pytest.mark.parametrize(
    ("inspected", "want"),
    [
        (None, ("not-found", "", False)),
        ({"State": {"Status": "running", "Running": True, "Pid": 9}}, ("loaded", "active", True)),
        ({"State": {"Status": "restarting", "Running": True, "Restarting": True, "Pid": 9}},
         ("loaded", "activating", True)),  # restarting: not "running" for the step (still_starting is false)
        ({"State": {"Status": "exited", "ExitCode": 1}}, ("loaded", "failed", False)),
        ({"State": {"Status": "exited", "ExitCode": 0}}, ("loaded", "inactive", False)),
        ({"State": {"Status": "created"}}, ("loaded", "inactive", False)),
    ],
    ids=["none", "running", "restarting", "failed", "stopped", "created"],
)
def test_container_state(inspected, want):
    state = container_state(inspected)
    assert (state.load_state, state.active_state, state.main_pid > 0) == want


def test_docker_environment_names_only_what_is_set():
    assert docker_environment({"docker_host": "unix:///d.sock", "docker_config": ""}) == {
        "DOCKER_HOST": "unix:///d.sock"}
