"""What the repository itself holds: text, not packages; and no playbook that only forwards to another one
except the name users already call.

Binaries the tests need (engines, models, Debian packages) are made in the cache by the scripts under scripts/,
as the engine is; a package committed at the root would also ship in the collection tarball.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
PACKAGE_SUFFIXES = (".deb", ".rpm", ".whl", ".tar.gz", ".tgz", ".zip", ".gguf", ".so")
# Wrappers kept for a name users call: deploy-llm.yml is the README's command (a collection playbook's own name
# cannot hold a hyphen, so the installed one is deploy_llm).
KEPT_WRAPPERS = {"deploy-llm.yml"}


def tracked_files() -> list[Path]:
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    return [ROOT / name for name in listed.decode().split("\0") if name]


def test_no_package_or_binary_is_tracked():
    files = [path for path in tracked_files() if path.is_file()]
    assert files, "git ls-files listed nothing"
    packages = [str(path.relative_to(ROOT)) for path in files if path.name.endswith(PACKAGE_SUFFIXES)]
    assert packages == []
    binary = [str(path.relative_to(ROOT)) for path in files if b"\0" in path.read_bytes()]
    assert binary == []


def _only_imports(path: Path) -> bool:
    """A playbook that only imports others, as they are: another name for them. One that imports with variables of
    its own (maintenance.yml: the deploy playbook with a request) is a playbook of its own."""
    plays = yaml.safe_load(path.read_text()) or []
    return bool(plays) and all(("ansible.builtin.import_playbook" in play or "import_playbook" in play)
                               and not play.get("vars") for play in plays)


def test_no_wrapper_playbook_without_an_old_name_to_keep():
    wrappers = {path.name for path in (ROOT / "playbooks").glob("*.yml") if _only_imports(path)}
    assert wrappers == KEPT_WRAPPERS
