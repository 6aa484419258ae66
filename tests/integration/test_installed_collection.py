"""The collection as a user gets it: the built tarball, installed offline next to nothing else.

The README's install steps, in a fresh collections path that holds only this collection (no community.docker,
no checkout symlinks): `ansible-galaxy collection build`, `ansible-galaxy collection install --offline`, then
ansible-doc on every plugin of every type the collection ships and on the role, and the deploy playbook by its
FQCN through ansible-playbook's syntax check. The plugin list is read from the tarball's own file list, so a
new plugin is checked without editing this test.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from .conftest import REPO

BIN = Path(sys.executable).parent
# ansible-doc's plugin types, by the collection's directory names. Actions share their module's docs; doc
# fragments, module_utils and plugin_utils are no plugins.
DOC_TYPES = {"modules": "module", "filter": "filter", "callback": "callback", "lookup": "lookup"}


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> tuple[Path, Path, dict]:
    work = tmp_path_factory.mktemp("installed")
    dist, collections = work / "dist", work / "collections"
    env = {key: value for key, value in os.environ.items() if not key.startswith("ANSIBLE_")}
    env.update(ANSIBLE_COLLECTIONS_PATH=str(collections), ANSIBLE_NOCOLOR="1",
               ANSIBLE_LOCAL_TEMP=str(work / "tmp"), HOME=str(work))
    build = subprocess.run([str(BIN / "ansible-galaxy"), "collection", "build", "--output-path", str(dist),
                            str(REPO)], capture_output=True, text=True, env=env, check=False)
    assert build.returncode == 0, build.stdout + build.stderr
    (tarball,) = dist.glob("llamafleet-llamacpp-*.tar.gz")
    install = subprocess.run([str(BIN / "ansible-galaxy"), "collection", "install", "--offline", "-p",
                              str(collections), str(tarball)], capture_output=True, text=True, env=env, check=False)
    assert install.returncode == 0, install.stdout + install.stderr
    return tarball, collections, env


def shipped_plugins(tarball: Path) -> list[tuple[str, str]]:
    """(type, FQCN) of every plugin file in the tarball: modules, callbacks and lookups by .py, filters by their doc
    .yml."""
    suffix_of = {"module": ".py", "callback": ".py", "lookup": ".py", "filter": ".yml"}
    plugins = set()
    with tarfile.open(tarball) as archive:
        for name in archive.getnames():
            parts = Path(name).parts
            if len(parts) == 3 and parts[0] == "plugins" and parts[1] in DOC_TYPES:
                kind, path = DOC_TYPES[parts[1]], Path(parts[2])
                if path.suffix == suffix_of[kind] and not path.stem.startswith("_"):
                    plugins.add((kind, f"llamafleet.llamacpp.{path.stem}"))
    return sorted(plugins)


def test_the_tarball_carries_no_local_files(installed):
    tarball = installed[0]
    with tarfile.open(tarball) as archive:
        names = archive.getnames()
    local_tops = {".venv", ".collections", ".cache", ".hypothesis", ".pytest_cache", ".ruff_cache", ".ci", "dist"}
    outputs = ("fleet-summary.md", "fleet-targets.json", "fleet-ledger.json", "fleet-ledger.json.lock", "ansible.cfg")
    local = [name for name in names
             if name.split("/")[0] in local_tops or name.split("/")[0].startswith(".venv-")
             or name.endswith((".pyc", ".log")) or name in outputs or name.startswith("tests/output")]
    assert local == [], local
    # Packages and other binaries are made in the cache by the scripts that need them, never shipped.
    with tarfile.open(tarball) as archive:
        binary = [member.name for member in archive.getmembers()
                  if member.isfile() and b"\0" in archive.extractfile(member).read()]
    assert binary == [], binary
    for required in ("LICENSE", "meta/runtime.yml", "meta/execution-environment.yml", "CHANGELOG.md"):
        assert required in names, required


def test_every_plugin_has_working_docs(installed):
    tarball, env = installed[0], installed[2]
    plugins = shipped_plugins(tarball)
    assert {kind for kind, _name in plugins} == set(DOC_TYPES.values()), plugins
    for kind in DOC_TYPES.values():
        listed = subprocess.run([str(BIN / "ansible-doc"), "-t", kind, "-l", "--json", "llamafleet.llamacpp"],
                                capture_output=True, text=True, env=env, check=True)
        assert sorted(json.loads(listed.stdout)) == [name for k, name in plugins if k == kind], kind
    # One ansible-doc per type, naming all its plugins (one per plugin took 84 s): each must come back with its
    # documentation, and any warning fails the type, naming the plugin in its text.
    for kind in DOC_TYPES.values():
        names = [name for k, name in plugins if k == kind]
        shown = subprocess.run([str(BIN / "ansible-doc"), "-t", kind, "--json", *names], capture_output=True,
                               text=True, env=env, check=False)
        assert shown.returncode == 0, f"{kind}: {shown.stdout}{shown.stderr}"
        assert "[WARNING]" not in shown.stderr, (kind, shown.stderr)
        found = json.loads(shown.stdout)
        assert sorted(found) == names, kind
        for name in names:
            doc = found[name]["doc"]
            assert doc.get("short_description") or doc.get("description"), (kind, name)


def test_the_role_has_docs(installed):
    env = installed[2]
    shown = subprocess.run([str(BIN / "ansible-doc"), "-t", "role", "--json", "llamafleet.llamacpp.llama_server"],
                           capture_output=True, text=True, env=env, check=False)
    assert shown.returncode == 0, shown.stdout + shown.stderr
    entry_points = json.loads(shown.stdout)["llamafleet.llamacpp.llama_server"]["entry_points"]
    assert "llama_server_presets" in entry_points["main"]["options"]


def test_the_deploy_playbook_runs_by_fqcn_without_community_docker(installed, tmp_path):
    collections, env = installed[1], installed[2]
    assert not (collections / "ansible_collections" / "community").exists()
    proc = subprocess.run([str(BIN / "ansible-playbook"), "--syntax-check", "-i", "localhost,",
                           "llamafleet.llamacpp.deploy_llm"], capture_output=True, text=True, env=env,
                          cwd=tmp_path, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
