# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the host judge reads of a host besides its instances: account, directories, planning runtime, engine (or
the compose runtime's image), models, removed instances and the rollout lock. Read-only.

Each function returns why the role would change something ("" or [] when it would not), in the words of the
report. The expectations come from the role (its directory table, runtime manifest, engine marker), the same
data its own tasks enforce, so the judge and the tasks cannot disagree on what "in place" means.
"""

from __future__ import annotations

import grp
import json
import os
import pwd
import stat
from collections.abc import Callable, Mapping, Sequence

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._layout.paths import (
    InstancePaths,
    container_name,
    instance_files,
    unit_name,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.model_markers import unverified_why
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.service import Runner, read_unit_state


def _uid(name: str) -> int | None:
    try:
        return pwd.getpwnam(name).pw_uid
    except KeyError:
        return None


def _gid(name: str) -> int | None:
    try:
        return grp.getgrnam(name).gr_gid
    except KeyError:
        return None


def account_problems(account: Mapping) -> list[str]:
    """The service group and user as the role's account tasks leave them."""
    group_id = _gid(account["group"])
    if group_id is None:
        return [f"the service group {account['group']} does not exist"]
    try:
        user = pwd.getpwnam(account["user"])
    except KeyError:
        return [f"the service user {account['user']} does not exist"]
    wanted = {"group": group_id, "home": account["home"], "shell": account["shell"], "comment": account["comment"]}
    found = {"group": user.pw_gid, "home": user.pw_dir, "shell": user.pw_shell, "comment": user.pw_gecos}
    return [f"the service user's {what} differs" for what in wanted if wanted[what] != found[what]]


def directory_problems(directories: Sequence[Mapping]) -> list[str]:
    """Each directory exists, with the owner, group and mode of the role's table."""
    problems = []
    for entry in directories:
        path = entry["path"]
        try:
            found = os.stat(path)
        except OSError:
            problems.append(f"{path} is missing")
            continue
        wanted = (_uid(str(entry["owner"])), _gid(str(entry["group"])), int(str(entry["mode"]), 8))
        if not stat.S_ISDIR(found.st_mode) or (found.st_uid, found.st_gid, stat.S_IMODE(found.st_mode)) != wanted:
            problems.append(f"{path} is not a directory with owner {entry['owner']}, group {entry['group']}, "
                            f"mode {entry['mode']}")
    return problems


def _json_file(path: str):
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return None


def runtime_problem(marker: str, manifest: Mapping) -> str:
    """The planning venv was built from this manifest (the role writes it once pip succeeded)."""
    if _json_file(marker) != dict(manifest):
        return "the planning runtime is not the wanted one"
    return ""


def read_engine_marker(path: str) -> dict | None:
    """An engine archive's install marker ({url, checksum, bin}); None when there is none or it is unreadable."""
    found = _json_file(path)
    return found if isinstance(found, dict) else None


def engine_binary(engine: Mapping) -> tuple[str, str]:
    """(the engine's path, "") when it is installed as wanted; ("", why) when the engine step has work."""
    binary = str(engine.get("bin") or "")
    if not binary:
        marker = read_engine_marker(str(engine.get("marker") or ""))
        if marker is None or marker.get("checksum") != engine.get("checksum"):
            return "", "the engine archive is not installed yet"
        binary = str(marker.get("bin") or "")
    if not (os.path.isfile(binary) and os.access(binary, os.X_OK)):
        return "", f"the engine binary {binary or '(none)'} is not an executable file"
    return binary, ""


def model_problems(models: Sequence[Mapping], marker_dir: str) -> list[str]:
    problems = []
    for model in models:
        why = unverified_why(marker_dir, model["path"], model["checksum"])
        if why:
            problems.append(f"model {os.path.basename(model['path'])}: {why}")
    return problems


def image_problem(docker_run: Runner, settings: Mapping) -> str:
    """The compose runtime's image is on the host, and the role would not pull it again."""
    if settings["image_pull"] == "always":
        return "llama_server_image_pull is always: the role pulls the image on every run"
    rc, _out, _err = docker_run([settings["docker_cli"], "image", "inspect", "--format", "{{.Id}}",
                                 settings["image"]])
    return "" if rc == 0 else f"the image {settings['image']} is not on this host yet"


def unit_known(run: Runner, name: str) -> bool:
    state = read_unit_state(run, unit_name(name))
    return state.loaded or state.active_state == "failed"


def container_known(docker_run: Runner, settings: Mapping, name: str) -> bool:
    rc, _out, _err = docker_run([settings["docker_cli"], "container", "inspect", "--format", "{{.Id}}",
                                 container_name(name)])
    return rc == 0


def absent_problem(name: str, paths: InstancePaths, unit_file: str, known: Callable[[str], bool]) -> str:
    """An instance in state absent still has files, or its service manager still knows it."""
    left = [path for path in instance_files(paths, unit_file) if os.path.lexists(path)]
    if left:
        return f"instance {name} is to be absent but {left[0]} is still there"
    if known(name):
        return f"instance {name} is to be absent but its service still exists"
    return ""


def read_lock(path: str) -> dict:
    """The rollout lock's holder; {} when it is free (or unreadable: the lock step decides then)."""
    holder = _json_file(path)
    return holder if isinstance(holder, dict) else {}
