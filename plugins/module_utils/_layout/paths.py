# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the collection's services are called and where each instance's files live: the one home of these names.

Pure. Everything that names a unit, a container, a credential, a state file, a verified copy, the rollout lock or
an install marker imports it from here: the instance step, the host judge, the plan module, the lock, and the role
(through the module results and the ``instance_files`` list the removal uses).
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass

UNIT_DIR = "/etc/systemd/system"
# systemd's LoadCredential= directory of a unit, where the engine reads its key file.
CREDENTIALS_RUN_DIR = "/run/credentials"
# One rollout at a time per host; a lock older than the lease counts as abandoned.
LOCK_PATH = "/run/llamafleet/rollout.lock"
LOCK_LEASE_S = 21600
# A lease too short lets a second rollout take a lock that is still used; one too long blocks a host for days.
LOCK_LEASE_BOUNDS = (60, 604800)
# Written into an engine archive's install directory once it is unpacked: {url, checksum, bin}.
ENGINE_MARKER = ".llamafleet-engine.json"
# Under the models directory: one marker per verified model file.
MODEL_MARKER_DIR = ".llamafleet"
# In the planning venv: what it was built from.
RUNTIME_MARKER = "llamafleet-runtime.json"
# The plan's GPU selection is by nvidia-smi's numbering, which follows the PCI bus.
CUDA_ORDER = {"CUDA_DEVICE_ORDER": "PCI_BUS_ID"}


def unit_name(instance: str) -> str:
    return f"llama-server-{instance}.service"


def unit_path(instance: str, unit_dir: str = UNIT_DIR) -> str:
    return f"{unit_dir}/{unit_name(instance)}"


def container_name(instance: str) -> str:
    return f"llama-server-{instance}"


def credential_path(instance: str) -> str:
    """Where the engine of a systemd instance reads its key: the unit's LoadCredential= directory."""
    return f"{CREDENTIALS_RUN_DIR}/{unit_name(instance)}/api_key"


def engine_marker(engine_dir: str) -> str:
    return posixpath.join(engine_dir, ENGINE_MARKER)


def model_marker_dir(models_dir: str) -> str:
    return posixpath.join(models_dir, MODEL_MARKER_DIR)


def runtime_marker(venv: str) -> str:
    return posixpath.join(venv, RUNTIME_MARKER)


def venv_python(venv: str) -> str:
    """The venv's interpreter; "" without a venv (the actions then run their module under the host's own)."""
    return posixpath.join(venv, "bin", "python") if venv else ""


def venv_wheels_dir(venv: str) -> str:
    """Beside the venv: the wheels copied from the controller for a host without a package index."""
    return f"{venv}.wheels"


def engine_downloads_dir(engines_dir: str) -> str:
    """Under the engines directory: where the engine archives are downloaded."""
    return f"{engines_dir}/.downloads"


def instances_dir(home: str) -> str:
    """Under the service account's home: one directory per instance, the only place its engine may write."""
    return f"{home}/instances"


@dataclass(frozen=True)
class InstancePaths:
    """One instance's files, from the role's directories (``home``, ``config_dir``, ``credentials_dir``,
    ``plan_cache_dir`` and, for compose, ``compose_dir``)."""

    home_dir: str  # the instance's directory (its slots); the only one its engine may write
    key_file: str  # root-only: the API key
    env_file: str  # root-only: LLAMA_API_KEY=<key>, for an engine without --api-key-file
    state_file: str  # the planning state of the last verified deployment
    last_good: str  # the files last verified healthy (the rollback)
    plan_cache: str  # the plan module's caches of this instance
    compose_file: str  # the instance's file of the compose project ("" without a compose directory)
    models_file: str = ""  # a router instance's models file (its --models-preset)


def instance_paths(name: str, *, home: str, config_dir: str, credentials_dir: str, plan_cache_dir: str,
                   compose_dir: str = "") -> InstancePaths:
    return InstancePaths(
        home_dir=f"{instances_dir(home)}/{name}",
        key_file=f"{credentials_dir}/{name}.key",
        env_file=f"{credentials_dir}/{name}.env",
        state_file=f"{config_dir}/instance-{name}.json",
        last_good=f"{config_dir}/last-good/{name}",
        plan_cache=f"{plan_cache_dir}/{name}",
        compose_file=f"{compose_dir}/{name}.yaml" if compose_dir else "",
        models_file=f"{config_dir}/models-{name}.ini",
    )


def paths_of(name: str, settings, compose_dir: str = "") -> InstancePaths:
    """instance_paths from a settings mapping (the ``settings`` option of the instance step)."""
    return instance_paths(name, home=settings["home"], config_dir=settings["config_dir"],
                          credentials_dir=settings["credentials_dir"], plan_cache_dir=settings["plan_cache_dir"],
                          compose_dir=compose_dir)


def instance_files(paths: InstancePaths, unit_file: str = "") -> list[str]:
    """Everything the role leaves for one instance, which state absent removes and the judge looks for: its unit or
    compose file, credentials, planning state, verified copy, plan cache and home (which holds its slots)."""
    service_file = [path for path in (unit_file, paths.compose_file) if path]
    return [*service_file, paths.key_file, paths.env_file, paths.models_file, paths.state_file, paths.last_good,
            paths.plan_cache, paths.home_dir]


# The service account every instance runs as: no login shell.
SERVICE_SHELL = "/usr/sbin/nologin"
SERVICE_COMMENT = "llama-server (llamafleet)"


def service_account(settings) -> dict:
    """The service account and the directories every instance shares, from the role's settings (``user``,
    ``group``, ``home``, ``models_dir``, ``config_dir``, ``credentials_dir``, ``runtime``, ``compose_dir``): the
    account step creates them, the host judge checks them, from this one table."""
    user, group, home = str(settings["user"]), str(settings["group"]), str(settings["home"])
    directories = [
        # The service user's home; each unit may write only its <home>/instances/<name> (ReadWritePaths=).
        {"path": home, "owner": user, "group": group, "mode": "0750"},
        {"path": instances_dir(home), "owner": user, "group": group, "mode": "0750"},
        # Models: written by root, read by the service.
        {"path": str(settings["models_dir"]), "owner": "root", "group": group, "mode": "0750"},
        # Planning state (instance-<name>.json); keys and environment files, root only: systemd hands them over.
        # (The planner creates its own cache directory.)
        {"path": str(settings["config_dir"]), "owner": "root", "group": "root", "mode": "0755"},
        {"path": str(settings["credentials_dir"]), "owner": "root", "group": "root", "mode": "0700"},
    ]
    if settings.get("runtime") == "compose":
        # The compose project: one file per instance.
        directories.append({"path": str(settings["compose_dir"]), "owner": "root", "group": "root", "mode": "0755"})
    return {"user": user, "group": group, "home": home, "shell": SERVICE_SHELL, "comment": SERVICE_COMMENT,
            "directories": directories}
