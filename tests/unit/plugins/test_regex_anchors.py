"""Whole-value patterns end with ``\\Z``, never ``$``: ``$`` also matches before a final newline, so ``"main\\n"``
(a YAML ``|`` block) would pass as the name ``main`` and break the file it is written into."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
_RE_CALLS = ("compile", "match", "search", "fullmatch")


def _multiline(call: ast.Call) -> bool:
    return "MULTILINE" in ast.unparse(call) or "re.M" in ast.unparse(call)


def dollar_anchored(source: str) -> list[str]:
    """The patterns of ``re`` calls in the source that end with ``$`` (outside re.MULTILINE)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _RE_CALLS
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "re" and node.args):
            continue
        pattern = node.args[0]
        if (isinstance(pattern, ast.Constant) and isinstance(pattern.value, str)
                and re.search(r"(?<!\\)\$\Z", pattern.value) and not _multiline(node)):
            found.append(f"line {node.lineno}: {pattern.value!r}")
    return found


@pytest.mark.parametrize(
    ("source", "found"),
    [
        ('import re\nNAME = re.compile(r"^[a-z]+$")\n', ["line 2: '^[a-z]+$'"]),
        ('import re\nNAME = re.compile(r"[a-z]+\\Z")\n', []),
        ('import re\nLINE = re.compile(r"^x$", re.MULTILINE)\n', []),
        ('import re\nok = re.match(r"a\\$", s)\n', []),
    ],
    ids=["dollar", "backslash-z", "multiline", "an escaped dollar"],
)
def test_the_check(source, found):
    assert dollar_anchored(source) == found


def test_no_pattern_of_the_collection_ends_with_a_dollar():
    problems = {str(path.relative_to(ROOT)): found for path in sorted((ROOT / "plugins").rglob("*.py"))
                if (found := dollar_anchored(path.read_text(encoding="utf-8")))}
    assert problems == {}
