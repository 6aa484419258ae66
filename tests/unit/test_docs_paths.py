"""The docs name only what the repository has: every path in README.md and docs/*.md exists, and the note-id
list in docs/planner.md is the code's.

Paths are read from code spans (inline and fenced): a word that starts with a top-level directory of the
repository, a short form of a plugins/ package (``_planner/x.py``, ``plugin_utils/y.py``), or the name of a
root file. Words with a placeholder (``<version>``, ``*``, ``…``) are patterns, not paths, and are skipped.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
DOCS = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")])

TOP_DIRS = ("docs", "scripts", "plugins", "roles", "playbooks", "meta", "molecule", "bench", "tests", "changelogs",
            ".ci")
# The docs write module_utils' and plugin_utils' packages without their parents.
SHORT_FORMS = {
    "_planner/": "plugins/module_utils/_planner/",
    "_probes/": "plugins/module_utils/_probes/",
    "_render/": "plugins/module_utils/_render/",
    "_judgements/": "plugins/module_utils/_judgements/",
    "_layout/": "plugins/module_utils/_layout/",
    "_converge/": "plugins/module_utils/_converge/",
    "plugin_utils/": "plugins/plugin_utils/",
}
ROOT_FILE = re.compile(
    r"^(?:requirements[\w.-]*\.txt|galaxy\.yml|pyproject\.toml|Makefile|[A-Z]+\.md|[\w-]+-summary\.md)$"
)
PLACEHOLDER = re.compile(r"[<>*…{}$]")

# Named by the docs but made at run time, so absent from a fresh checkout.
GENERATED = {
    "fleet-summary.md": "written by the deploy playbook's summary play (make deploy-local); git-ignored",
}

_FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
_INLINE = re.compile(r"`([^`\n]+)`")


def code_spans(text: str) -> list[str]:
    fenced = _FENCE.findall(text)
    rest = _FENCE.sub("", text)
    return [block.strip("`") for block in fenced] + _INLINE.findall(rest)


def repo_path(word: str) -> str:
    """The repository-relative path a word of a code span names, or "" when it names none."""
    # Leading dots are kept: .ci/ is a directory.
    word = word.split("::", 1)[0].lstrip("\"'([").rstrip("\"')],;:.")
    word = word.removeprefix("./")
    if not word or PLACEHOLDER.search(word) or "://" in word or word.startswith("/"):
        return ""
    for short, full in SHORT_FORMS.items():
        if word.startswith(short):
            return full + word[len(short):]
    if any(word == top or word.startswith(top + "/") for top in TOP_DIRS):
        return word
    return word if ROOT_FILE.match(word) else ""


def named_paths() -> list[tuple[str, str]]:
    found = set()
    for doc in DOCS:
        for span in code_spans(doc.read_text(encoding="utf-8")):
            for word in span.split():
                path = repo_path(word)
                if path:
                    found.add((doc.relative_to(ROOT).as_posix(), path))
    return sorted(found)


NAMED = named_paths()


@pytest.mark.parametrize(
    ("word", "path"),
    [
        ("docs/planner.md", "docs/planner.md"),
        ("scripts/wheels.sh", "scripts/wheels.sh"),
        ("plugins/module_utils/_planner/", "plugins/module_utils/_planner/"),
        ("_render/compose_service.py", "plugins/module_utils/_render/compose_service.py"),
        ("plugin_utils/compose_file.py,", "plugins/plugin_utils/compose_file.py"),
        ("tests/unit/x.py::test_y", "tests/unit/x.py"),
        ("(roles/llama_server/)", "roles/llama_server/"),
        ("requirements-2.16.txt", "requirements-2.16.txt"),
        ("fleet-summary.md", "fleet-summary.md"),
        ("tests/unit/plugins/…", ""),  # an ellipsis: a pattern
        ("/opt/llamafleet/engines/<version>/bin", ""),  # absolute, and a placeholder
        ("group_vars/llama_fleet.yml", ""),  # the user's inventory, not ours
        ("engine.py", ""),  # a bare module name: the sentence says where
        ("https://example.invalid/x.tar.gz", ""),
        ("config.env", ""),
        (".ci/run", ".ci/run"),
        ("docs/x.md.", "docs/x.md"),
    ],
)
def test_repo_path_reading(word, path):
    assert repo_path(word) == path


def test_the_docs_name_paths_at_all():
    # A broken reader would make the existence test below pass on nothing.
    docs = {doc for doc, _path in NAMED}
    assert {"README.md", "docs/architecture.md", "docs/planner.md"} <= docs
    assert len(NAMED) > 40


# The generated paths are left out here (not skipped); the test below checks they are git-ignored.
CHECKED = [(doc, path) for doc, path in NAMED if path not in GENERATED]


@pytest.mark.parametrize(("doc", "path"), CHECKED, ids=[f"{doc}:{path}" for doc, path in CHECKED])
def test_every_named_path_exists(doc, path):
    assert (ROOT / path).exists(), f"{doc} names {path}, which is not in the repository"


def test_generated_paths_are_git_ignored():
    # A generated file that is not ignored could be committed, and then its entry would hide a stale copy.
    ignored = (ROOT / ".gitignore").read_text(encoding="utf-8").splitlines()
    assert [path for path in GENERATED if path not in ignored] == []


# ---------------------------------------------------------------------------
# Note ids: docs/planner.md's table against the Note(...) calls of the code
# ---------------------------------------------------------------------------

_NOTE_ID = re.compile(r"^[a-z_]+(?:\.[a-z_]+)?$")


def code_note_ids() -> set[str]:
    ids = set()
    for source in (ROOT / "plugins" / "module_utils").rglob("*.py"):
        for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call) or not node.args:
                continue
            name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
            first = node.args[0]
            if name == "Note" and isinstance(first, ast.Constant) and isinstance(first.value, str):
                ids.add(first.value)
    return ids


def documented_note_ids() -> set[str]:
    text = (ROOT / "docs" / "planner.md").read_text(encoding="utf-8")
    section = text.split("## Note ids", 1)[1].split("\n## ", 1)[0]
    ids = set()
    for line in section.splitlines():
        cells = line.split("|")
        if len(cells) < 4 or set(cells[1].strip()) <= {"-"} or cells[1].strip() == "module":
            continue
        ids.update(span for span in _INLINE.findall(cells[2]) if _NOTE_ID.match(span))
    return ids


def test_every_note_id_is_documented_and_every_documented_id_exists():
    code, documented = code_note_ids(), documented_note_ids()
    assert len(code) > 50  # the scan found the rules' notes
    assert sorted(code - documented) == [], "note ids missing from docs/planner.md"
    assert sorted(documented - code) == [], "docs/planner.md lists ids no code gives"


# ---------------------------------------------------------------------------
# Role variables: every llama_server_* the docs name is in the role's argument specs (or is a module)
# ---------------------------------------------------------------------------

_ROLE_WORD = re.compile(r"\bllama_server_[a-z0-9_]+\b")


def test_every_named_role_variable_is_in_the_argument_specs():
    specs = yaml.safe_load((ROOT / "roles/llama_server/meta/argument_specs.yml").read_text(encoding="utf-8"))
    variables = set(specs["argument_specs"]["main"]["options"])
    modules = {p.stem for p in (ROOT / "plugins" / "modules").glob("*.py")}
    # The facts the role records for the playbook, described in the role's own description.
    facts = {"llama_server_report", "llama_server_failure"}
    unknown = sorted(
        (doc.relative_to(ROOT).as_posix(), word)
        for doc in DOCS
        for span in code_spans(doc.read_text(encoding="utf-8"))
        for word in _ROLE_WORD.findall(span)
        if word not in variables | modules | facts
    )
    assert unknown == []
