"""The unit read back as systemd reads it: every value of a free-text field stays in its field.

Two readers. systemd's own (``systemd-analyze verify``, offline, on this machine's systemd) on a corpus of
hostile values: the unit loads without a warning, and a unit with an injected directive does not. And systemd's
line grammar, written down here (a line ends at ``\\n``, ``\\r`` or NUL; one ending in a backslash goes on; ``#``
and ``;`` start comments): for any text in any free-text field, the unit holds the same directives, in the same
order, as with a plain value.
"""

from __future__ import annotations

import dataclasses
import re
import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.notes import Note
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._render.systemd_quoting import UnitValueError
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._render.systemd_unit import (
    UnitRenderError,
    UnitSpec,
    render_unit,
)

# /bin/true and root exist everywhere: systemd-analyze checks the command and, quietly, the account.
BASE = UnitSpec(instance="main", argv=["/bin/true", "-m", "/m/a.gguf", "-c", "4096"], user="root", group="root",
                home_dir="/var/lib/llamafleet/instances/main", key_file="/etc/llamafleet/credentials/main.key",
                slot_dir="/var/lib/llamafleet/instances/main/slots", environment={"GGML_X": "1"},
                notes=[Note("n.1", "plain")])
HOSTILE = [
    "\r", "\n", "\r\n", "a\rExecStartPre=+/bin/sh -c id\r#", "\nExecStartPre=/nonexistent\n", "x\\", "\\",
    "%", "%Z", "%%", "$HOME", "${HOME}", "$$", '"', "'", '\\"', "\\x41", "\t", " ", "", "#", ";", "\x0b\x0c",
    "\x1b[31m", "\u2028", "\u0085", "caf\u00e9 \U0001f600", "a" * 5000, "[Service]", "=",
]
# Where free text goes: the command's words, an environment value, a note.
FIELDS = {
    "argv": lambda text: {"argv": [*BASE.argv, "--alias", text]},
    "environment": lambda text: {"environment": {"GGML_X": text}},
    "note": lambda text: {"notes": [Note("n.1", text)]},
}

_LINE_END = re.compile(r"\r\n|\r|\n|\0")


def directives(text: str) -> list[tuple[str, str]]:
    """(section, key) of every assignment, by systemd's line grammar."""
    found, section, pending = [], "", ""
    for raw in _LINE_END.split(text):
        line = pending + raw
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2:  # an odd number of backslashes: the line goes on
            pending = line[:-1] + " "
            continue
        pending = ""
        stripped = line.strip()
        if not stripped or stripped[0] in "#;":
            continue
        if stripped.startswith("["):
            section = stripped
            continue
        found.append((section, stripped.split("=", 1)[0].strip()))
    return found


PLAIN = directives(render_unit(BASE))


def rendered_or_refused(change: dict) -> str | None:
    try:
        return render_unit(dataclasses.replace(BASE, **change))
    except (UnitRenderError, UnitValueError):
        return None


def test_the_reader_sees_an_injection():
    injected = render_unit(BASE).replace("WorkingDirectory=/var/lib/llamafleet/instances/main",
                                         "WorkingDirectory=/tmp\rExecStartPre=+/bin/sh -c id\r#")
    assert ("[Service]", "ExecStartPre") in directives(injected)
    assert directives(injected) != PLAIN


@settings(max_examples=300, deadline=None)
@given(field=st.sampled_from(sorted(FIELDS)), text=st.text())
def test_any_text_in_a_free_field_stays_in_it(field, text):
    unit = rendered_or_refused(FIELDS[field](text))
    if unit is not None:
        assert directives(unit) == PLAIN


def _verify(tmp_path, text: str) -> subprocess.CompletedProcess:
    path = tmp_path / "llama-server-main.service"
    path.write_text(text, encoding="utf-8")
    return subprocess.run(["systemd-analyze", "verify", "--man=no", str(path)], capture_output=True, text=True,
                          check=False, timeout=60)


def test_systemd_reads_the_plain_unit_without_a_word(tmp_path):
    done = _verify(tmp_path, render_unit(BASE))
    assert (done.returncode, done.stdout + done.stderr) == (0, "")


def test_systemd_sees_an_injected_directive(tmp_path):
    injected = render_unit(BASE).replace("WorkingDirectory=/var/lib/llamafleet/instances/main",
                                         "WorkingDirectory=/tmp\rExecStartPre=/nonexistent/x\r#")
    done = _verify(tmp_path, injected)
    assert done.returncode != 0
    assert "/nonexistent/x" in done.stderr


@pytest.mark.parametrize("field", sorted(FIELDS))
def test_systemd_reads_each_hostile_value_in_its_field(tmp_path, field):
    checked = 0
    for text in HOSTILE:
        unit = rendered_or_refused(FIELDS[field](text))
        if unit is None:
            continue
        done = _verify(tmp_path, unit)
        assert (done.returncode, done.stdout + done.stderr) == (0, ""), repr(text)
        assert directives(unit) == PLAIN, repr(text)
        checked += 1
    assert checked >= len(HOSTILE) - 2  # nearly all are written (escaped), not refused
