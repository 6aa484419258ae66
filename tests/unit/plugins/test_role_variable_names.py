"""The pure packages know no role variable: no string of theirs names one (``llama_server_*``, ``llama_fleet_*``,
``llama_gateway_*``, and their private ``_llama_*`` forms).

A pure package takes values; the controller's plugins read a host's variables by name (``plugin_utils/role_vars.py``)
and pass the values, and the variables' names where a message names them. A string literal is what carries such a
name (a docstring included); comments are not read. Not a role variable, so not counted: the name of one of the
collection's modules or actions (``llama_server_plan``).

What is left is allowed here, each with why:
- the settings tables (``_layout/settings.py``, ``_gateway/settings.py``) declare the roles' variables: the prefix,
  each setting's role default and role documentation (held to the roles' defaults and argument specs by their own
  tests), so naming them is their job;
- ``ALLOWED``: messages that name the variable the user set, which must stay word for word (tests and operators
  match them) and are raised where no caller passes a name today (some on the target, under the instance step).
  Each entry is one file and one name; one no longer found fails too, so the list only shrinks.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tests.unit.plugins.test_import_graph import PURE, ROOT

ROLE_VARIABLE = re.compile(r"(?<![A-Za-z0-9_])_?llama_(?:server|fleet|gateway)_[A-Za-z0-9_]*")
SETTINGS_TABLES = ("plugins/module_utils/_layout/settings.py", "plugins/module_utils/_gateway/settings.py")
PLUGINS = frozenset(path.stem for folder in ("modules", "action") for path in (ROOT / "plugins" / folder).glob("*.py"))
ALLOWED = {
    # The role's input check (the host action's first step): its messages name the variable to fix.
    ("plugins/module_utils/_inputs/role.py", "llama_server_instances"),
    ("plugins/module_utils/_inputs/role.py", "llama_server_presets"),
    ("plugins/module_utils/_inputs/role.py", "llama_server_runtime"),
    ("plugins/module_utils/_inputs/role.py", "llama_server_image"),
    ("plugins/module_utils/_inputs/role.py", "llama_server_engine_bin"),
    ("plugins/module_utils/_inputs/role.py", "llama_server_engine_archive_url"),
    ("plugins/module_utils/_inputs/role.py", "llama_server_engine_archive_checksum"),
    # The open-server guard's refusal, raised by the instance step on the target.
    ("plugins/module_utils/_judgements/access.py", "llama_server_allow_open"),
    # The compose renderer's refusals, on the target.
    ("plugins/module_utils/_render/compose_service.py", "llama_server_image"),
    ("plugins/module_utils/_render/compose_service.py", "llama_server_compose_health_command"),
    # An unknown preset, found by instance_preset under every entry point's instance check (on the target too).
    ("plugins/module_utils/_planner/preset_layers.py", "llama_server_presets"),
}


def _is_pure(path: Path) -> bool:
    name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
    return any(name == prefix or name.startswith(prefix + ".") for prefix in PURE)


def role_variables_in(source: str, plugins=PLUGINS) -> list[tuple[int, str]]:
    """(line, name) of every role variable a string literal of ``source`` names."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            found += [(node.lineno, name) for name in ROLE_VARIABLE.findall(node.value) if name not in plugins]
    return found


def named_in_pure_packages() -> dict[tuple[str, str], list[int]]:
    """Each (file, role variable) a pure package's string names, with its lines; the settings tables left out."""
    found: dict[tuple[str, str], list[int]] = {}
    for path in sorted((ROOT / "plugins" / "module_utils").rglob("*.py")):
        relative = path.relative_to(ROOT).as_posix()
        if not _is_pure(path) or relative in SETTINGS_TABLES:
            continue
        for line, name in role_variables_in(path.read_text(encoding="utf-8")):
            found.setdefault((relative, name), []).append(line)
    return found


FOUND = named_in_pure_packages()


def test_the_pure_packages_name_no_role_variable():
    unexpected = {f"{path}:{lines[0]}: {name}" for (path, name), lines in FOUND.items() if (path, name) not in ALLOWED}
    assert sorted(unexpected) == [], ("a pure package names a role variable: read it in the controller's plugins "
                                      "(plugin_utils/role_vars.py) and pass the value, or the name for a message")


def test_every_allowed_name_is_still_there():
    assert sorted(ALLOWED - set(FOUND)) == [], "no longer named there: drop it from ALLOWED"


def test_the_settings_tables_declare_the_prefixes():
    for path in SETTINGS_TABLES:
        assert re.search(r'^ROLE_PREFIX = "llama_(server|gateway)_"$', (ROOT / path).read_text(encoding="utf-8"), re.M)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ('x = variables.get("llama_fleet_labels")', [(1, "llama_fleet_labels")]),
        ('raise E(f"{n}: not in llama_server_presets")', [(1, "llama_server_presets")]),
        ('def f():\n    """Reads ``_llama_server_judgement``."""', [(2, "_llama_server_judgement")]),
        ('run("llama_server_plan")  # llama_fleet_labels', []),  # a module's name; a comment
        ('x = "my_llama_server_x"', []),
    ],
    ids=["read", "message", "docstring", "module-and-comment", "inside-a-word"],
)
def test_the_scan_finds_a_name_in_any_string(source, expected):
    assert role_variables_in(source) == expected
