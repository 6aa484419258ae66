"""The roles spell no path of their own (docs/architecture.md): their tasks, variables and handlers reach the
collection's paths through the ``llamafleet.llamacpp.layout_path`` filter or the modules' results, never by joining
a path word to a directory, nor by writing an absolute path out.

Read from the sources: a Jinja join (``{{ x }}/bin/python``, ``{{ x }}.wheels``), a ``~`` join with a quoted path
piece (``x ~ '/bin/python'``) and an absolute path literal (``/usr/sbin/nologin``) are each a finding; the few that
are no path of the collection are allowed below, each with why. The defaults are not read: they hold the settings'
default directories, which the user may change. A join of two values (``{{ a }}/{{ b }}``) spells no word, and a
trailing slash (``{{ src }}/``, a directory's contents to copy) none either.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("roles/*/tasks/*.yml", "roles/*/vars/*.yml", "roles/*/handlers/*.yml")

# A template's value followed by a path word: "/" and a word, or "." and a letter (a sibling such as .wheels).
JINJA_JOIN = re.compile(r"\{\{[^{}]*\}\}(?:/[\w.*-]|\.[A-Za-z])[\w./*-]*")
# A value joined by ~ to a quoted piece that starts a path: '/bin/python', '/', '/metrics', '.wheels'.
TILDE_JOIN = re.compile(r"[\w.)\]]+\s*~\s*(['\"])(?:/|\.[A-Za-z])[^'\"]*\1")
# A path written out: a "/" and a word, not after a word, a template, a dot, or another "/" or ":" (a URL's).
ABSOLUTE = re.compile(r"(?<![\w}/:.~-])/[A-Za-z_.][\w./*-]*")
COMMENT = re.compile(r"(^\s*#.*$)|(\s#\s.*$)", re.MULTILINE)

ALLOWED = {
    # A URL path joined to a URL (the gateway's health check): an HTTP endpoint, not a file on a host.
    ("roles/llama_gateway/tasks/main.yml", "{{ llama_gateway_url }}/health"),
    # The engine binary's path inside the archive is the user's (llama_server_engine_archive_binary), joined under
    # the directory the archive is unpacked into: the archive's layout, not the collection's.
    ("roles/llama_server/tasks/engine.yml", "_llama_server_engine_dir ~ '/'"),
    # The wheels the user put in their own directory on the controller, found by a glob: the user's files, named
    # by the wheel format, not a path of the collection.
    ("roles/llama_server/vars/main.yml", "llama_server_module_wheels_dir ~ '/*.whl'"),
}


def spelled_paths(text: str) -> list[tuple[int, str]]:
    """(line, what) of every path the text spells: its joins first, then the absolute paths outside them.
    Comments are left out; whitespace in what is found is folded to one space."""
    text = COMMENT.sub(lambda match: " " * len(match.group(0)), text)
    found = []
    for pattern in (JINJA_JOIN, TILDE_JOIN):
        for match in pattern.finditer(text):
            found.append((match.start(), match.group(0)))
            text = text[:match.start()] + " " * (match.end() - match.start()) + text[match.end():]
    found += [(match.start(), match.group(0)) for match in ABSOLUTE.finditer(text)]
    lines = [text.count("\n", 0, start) + 1 for start, _what in found]
    return sorted((line, " ".join(what.split())) for line, (_start, what) in zip(lines, found, strict=True))


def role_files() -> list[Path]:
    return sorted(path for pattern in SCANNED for path in ROOT.glob(pattern))


def findings() -> list[tuple[str, int, str]]:
    """(file, line, what) of every path the roles spell."""
    return [(path.relative_to(ROOT).as_posix(), line, what)
            for path in role_files() for line, what in spelled_paths(path.read_text(encoding="utf-8"))]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('x: "{{ x }}/bin/python"\n', [(1, "{{ x }}/bin/python")]),
        ('x: "{{ llama_server_venv }}/bin/python"\n', [(1, "{{ llama_server_venv }}/bin/python")]),
        ("argv: \"{{ [venv ~ '/bin/python', '-m', 'pip'] }}\"\n", [(1, "venv ~ '/bin/python'")]),
        ('dest: "{{ home }}/.downloads/{{ name }}"\n', [(1, "{{ home }}/.downloads/")]),
        ('dest: "{{ venv }}.wheels"\n', [(1, "{{ venv }}.wheels")]),
        ('a: 1\nshell: /usr/sbin/nologin\n', [(2, "/usr/sbin/nologin")]),
        ("loop:\n  - '/etc/haproxy'\n  - \"/run/x.sock\"\n", [(2, "/etc/haproxy"), (3, "/run/x.sock")]),
        ('x: "{{ a\n  }}/instances"\n', [(1, "{{ a }}/instances")]),  # a template over two lines
        # What is no path spelled: the layout's filter, a join of two values, a directory's contents, a URL's
        # scheme, a comment, a regular expression.
        ("x: \"{{ venv | llamafleet.llamacpp.layout_path('venv_python') }}\"\n", []),
        ('x: "{{ engines }}/{{ version }}"\nsrc: "{{ wheels }}/"\n', []),
        ("url: \"{{ 'https' if tls else 'http' }}://{{ host }}:{{ port }}\"\n", []),
        ("# each unit may write only its /var/lib/x/instances\nx: 1  # see /etc/y\n", []),
        ("x: \"{{ url | regex_replace('[?#].*$', '') | basename }}\"\n", []),
    ],
)
def test_the_scan_finds_a_spelled_path(text, expected):
    assert spelled_paths(text) == expected


def test_the_scan_reads_the_roles():
    files = role_files()
    assert {path.parent.name for path in files} == {"tasks", "vars", "handlers"}
    assert {path.parts[-3] for path in files} == {"llama_server", "llama_gateway"}


def test_the_roles_spell_no_path_of_their_own():
    spelled = [f"{name}:{line}: {what}" for name, line, what in findings() if (name, what) not in ALLOWED]
    assert spelled == [], "use the layout_path filter (plugins/filter/llama_server.py) or a module's result"


def test_every_allowed_path_is_still_spelled():
    # An entry whose path has gone would allow it back unseen.
    assert sorted(ALLOWED - {(name, what) for name, _line, what in findings()}) == []
