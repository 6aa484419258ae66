"""The collection's names and paths (_layout/paths.py): each spelt once, here checked once."""

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._layout.paths import (
    container_name,
    credential_path,
    engine_marker,
    instance_files,
    instance_paths,
    model_marker_dir,
    paths_of,
    runtime_marker,
    service_account,
    unit_name,
    unit_path,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._layout.settings import defaults


def test_names():
    assert unit_name("a") == "llama-server-a.service"
    assert unit_path("a") == "/etc/systemd/system/llama-server-a.service"
    assert unit_path("a", "/u") == "/u/llama-server-a.service"
    assert container_name("a") == "llama-server-a"
    assert credential_path("a") == "/run/credentials/llama-server-a.service/api_key"
    assert engine_marker("/opt/e/b1") == "/opt/e/b1/.llamafleet-engine.json"
    assert model_marker_dir("/m") == "/m/.llamafleet"
    assert runtime_marker("/v") == "/v/llamafleet-runtime.json"


@pytest.mark.parametrize(
    ("compose_dir", "unit_file", "first"),
    [("", "/etc/systemd/system/llama-server-main.service", "/etc/systemd/system/llama-server-main.service"),
     ("/etc/l/compose", "", "/etc/l/compose/main.yaml")],
    ids=["systemd", "compose"],
)
def test_instance_files_are_what_state_absent_removes(compose_dir, unit_file, first):
    paths = instance_paths("main", home="/var/lib/l", config_dir="/etc/l", credentials_dir="/etc/l/cred",
                           plan_cache_dir="/var/cache/l", compose_dir=compose_dir)
    assert instance_files(paths, unit_file) == [
        first, "/etc/l/cred/main.key", "/etc/l/cred/main.env", "/etc/l/models-main.ini", "/etc/l/instance-main.json",
        "/etc/l/last-good/main", "/var/cache/l/main", "/var/lib/l/instances/main"]


def test_paths_from_the_settings_table():
    paths = paths_of("x", defaults(), "/etc/llamafleet/compose")
    assert (paths.home_dir, paths.key_file, paths.compose_file) == (
        "/var/lib/llamafleet/instances/x", "/etc/llamafleet/credentials/x.key", "/etc/llamafleet/compose/x.yaml")


SETTINGS = {**defaults(), "user": "svc", "group": "grp", "home": "/srv/l", "models_dir": "/srv/m",
            "config_dir": "/etc/l", "credentials_dir": "/etc/l/cred", "compose_dir": "/etc/l/compose"}


@pytest.mark.parametrize(
    ("runtime", "last"),
    [("systemd", {"path": "/etc/l/cred", "owner": "root", "group": "root", "mode": "0700"}),
     ("compose", {"path": "/etc/l/compose", "owner": "root", "group": "root", "mode": "0755"})],
    ids=["systemd", "compose"],
)
def test_service_account_and_its_directories(runtime, last):
    account = service_account({**SETTINGS, "runtime": runtime})
    assert {k: v for k, v in account.items() if k != "directories"} == {
        "user": "svc", "group": "grp", "home": "/srv/l", "shell": "/usr/sbin/nologin",
        "comment": "llama-server (llamafleet)"}
    assert account["directories"][:4] == [
        {"path": "/srv/l", "owner": "svc", "group": "grp", "mode": "0750"},
        {"path": "/srv/l/instances", "owner": "svc", "group": "grp", "mode": "0750"},
        {"path": "/srv/m", "owner": "root", "group": "grp", "mode": "0750"},
        {"path": "/etc/l", "owner": "root", "group": "root", "mode": "0755"}]
    assert account["directories"][-1] == last
    assert len(account["directories"]) == (6 if runtime == "compose" else 5)
