"""Write the copies of the settings tables that Ansible reads from files.

Usage: generate_settings.py [--check]

Each role's settings are declared once, in a table: plugins/module_utils/_layout/settings.py (role llama_server)
and plugins/module_utils/_gateway/settings.py (role llama_gateway). Ansible cannot import a table, so this script
writes, between the lines "# BEGIN generated settings" and "# END generated settings" of each file:

  roles/<role>/defaults/main.yml          every setting's variable at its role default
  roles/<role>/meta/argument_specs.yml    every variable's type, default, choices and description
  plugins/doc_fragments/<fragment>.py     the suboptions of the modules' settings option

The rest of those files is written by hand. With --check nothing is written: it exits 1 naming the files that
regenerating would change (tests/unit/test_generated_settings.py runs the same check).

To add a setting: add its row to its role's table, Setting(name, type, default, doc=..., and as needed elements,
choices, role_default, form, bounds, secret, role_doc), then run
    .venv/bin/python scripts/generate_settings.py
and commit the table with the files it rewrote.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import yaml  # noqa: E402

import conftest  # noqa: E402

conftest.collection_path()  # makes ansible_collections.llamafleet.llamacpp importable
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._gateway.settings import (  # noqa: E402
    GATEWAY_SETTINGS,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._layout.settings import (  # noqa: E402
    SETTINGS,
    Setting,
    paragraphs,
)

WIDTH = 120  # the longest line, as ruff and the YAML files have it
BEGIN = "# BEGIN generated settings"
END = "# END generated settings"


@dataclass(frozen=True)
class Table:
    settings: tuple[Setting, ...]
    source: str  # where the table is declared, named in the markers
    fragment: str  # the doc fragment of the modules' settings option

    @property
    def role(self) -> str:
        return self.settings[0].role_prefix.removesuffix("_")


TABLES = (
    Table(SETTINGS, "plugins/module_utils/_layout/settings.py", "instance_settings"),
    Table(GATEWAY_SETTINGS, "plugins/module_utils/_gateway/settings.py", "gateway_settings"),
)


def _plain(value):
    return list(value) if isinstance(value, tuple) else value


def _role_default(setting: Setting):
    return setting.role_default if setting.role_default is not None else _plain(setting.default)


def _defaults(table: Table) -> dict:
    return {setting.role_variable: _role_default(setting) for setting in table.settings}


def _argument_specs(table: Table) -> dict:
    specs = {}
    for setting in table.settings:
        spec: dict = {"type": setting.type}
        if setting.elements:
            spec["elements"] = setting.elements
        if setting.secret:
            spec["no_log"] = True
        spec["default"] = _role_default(setting)
        if setting.choices:
            spec["choices"] = list(setting.choices)
        spec["description"] = paragraphs(setting.role_doc or setting.doc)
        specs[setting.role_variable] = spec
    return specs


def _suboptions(table: Table) -> dict:
    """The modules' settings option; a secret setting is an option of its own (no_log), not one of these."""
    options = {}
    for setting in table.settings:
        if setting.secret:
            continue
        option: dict = {"description": paragraphs(setting.doc), "type": setting.type}
        if setting.elements:
            option["elements"] = setting.elements
        if setting.choices:
            option["choices"] = list(setting.choices)
        option["default"] = _plain(setting.default)
        options[setting.name] = option
    return options


def _reads_back(document: str, value) -> bool:
    try:
        return yaml.safe_load(document) == value
    except yaml.YAMLError:
        return False


def _scalar(value, in_flow: bool = False) -> str:
    """A value on one line: plain where YAML reads it back as written, else double-quoted (yes, "4", Jinja)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(_scalar(item, in_flow=True) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_scalar(k, True)}: {_scalar(v, True)}" for k, v in value.items()) + "}"
    text = str(value)
    return text if _reads_back(f"[{text}]" if in_flow else f"- {text}", [text]) else json.dumps(text)


def _paragraph(text: str, indent: int) -> list[str]:
    """One item of a description list, wrapped at WIDTH (a plain scalar where YAML reads it back as written)."""
    for written in (text, json.dumps(text)):
        lines = textwrap.wrap(written, WIDTH, initial_indent=" " * indent + "- ", subsequent_indent=" " * (indent + 2),
                              break_long_words=False, break_on_hyphens=False)
        if _reads_back("\n".join(line[indent:] for line in lines), [text]):
            return lines
    raise ValueError(f"no YAML scalar reads back as {text!r}")


def _yaml_lines(mapping: dict, indent: int) -> list[str]:
    lines = []
    for key, value in mapping.items():
        pad = " " * indent
        if key == "description":
            lines.append(f"{pad}{key}:")
            lines += [line for text in value for line in _paragraph(text, indent + 2)]
        elif isinstance(value, dict) and value:
            lines.append(f"{pad}{key}:")
            lines += _yaml_lines(value, indent + 2)
        else:
            line = f"{pad}{key}: {_scalar(value)}"
            lines += _folded(line, pad + "  ") if len(line) > WIDTH and isinstance(value, str) else [line]
    return lines


def _folded(line: str, pad: str) -> list[str]:
    """A line ending in a long double-quoted string, broken after its commas: YAML folds each line break of a quoted
    string back into the one space it replaced (the dict expression of _vars_mapping, one entry never split)."""
    parts = line.split(", ")
    lines = [parts[0]]
    for part in parts[1:]:
        if len(lines[-1]) + len(", " + part) + 1 > WIDTH:  # (+1: the comma that may end the line)
            lines[-1] += ","
            lines.append(pad + part)
        else:
            lines[-1] += ", " + part
    return lines


def _region(mapping: dict, indent: int) -> list[str]:
    """The YAML lines of a mapping at an indentation, checked to read back as the mapping."""
    lines = _yaml_lines(mapping, indent)
    too_long = [line for line in lines if len(line) > WIDTH]
    if too_long:
        raise ValueError(f"lines over {WIDTH} characters: {too_long}")
    if not _reads_back("\n".join(line[indent:] for line in lines), mapping):
        raise ValueError(f"the YAML written does not read back as the table: {lines}")
    return lines


def _with_region(text: str, path: Path, table: Table, mapping: dict) -> str:
    """The file's text with its generated region written again (the markers' indentation is the region's)."""
    begins = list(re.finditer(rf"^( *){re.escape(BEGIN)}.*\n", text, re.MULTILINE))
    ends = list(re.finditer(rf"^ *{re.escape(END)}.*\n", text, re.MULTILINE))
    if len(begins) != 1 or len(ends) != 1 or ends[0].start() < begins[0].end():
        raise ValueError(f"{path.relative_to(ROOT)}: expected one '{BEGIN}' line, then one '{END}' line")
    pad = begins[0].group(1)
    lines = [f"{pad}{BEGIN} from {table.source} (scripts/generate_settings.py)",
             *_region(mapping, len(pad)), f"{pad}{END}"]
    return text[:begins[0].start()] + "\n".join(lines) + "\n" + text[ends[0].end():]


def rendered() -> dict[Path, str]:
    """Every generated file's text as the tables would have it now."""
    texts = {}
    for table in TABLES:
        role = ROOT / "roles" / table.role
        for path, mapping in (
            (role / "defaults" / "main.yml", _defaults(table)),
            (role / "meta" / "argument_specs.yml", _argument_specs(table)),
            (ROOT / "plugins" / "doc_fragments" / f"{table.fragment}.py", _suboptions(table)),
        ):
            texts[path] = _with_region(path.read_text(), path, table, mapping)
    return texts


def stale_files() -> list[str]:
    """The files regenerating would change, relative to the repository."""
    return [str(path.relative_to(ROOT)) for path, text in rendered().items() if path.read_text() != text]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 naming the stale files")
    check = parser.parse_args(argv).check
    if check:
        stale = stale_files()
        for name in stale:
            print(f"{name}: stale, run .venv/bin/python scripts/generate_settings.py", file=sys.stderr)
        return 1 if stale else 0
    for path, text in rendered().items():
        if path.read_text() != text:
            path.write_text(text)
            print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
