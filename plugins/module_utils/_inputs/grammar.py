# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The forms a value must have before it is written anywhere: names, paths, accounts, free text, numbers.

Pure. Each check returns "" when the value has the form, else why not; the callers (settings.py, instance.py)
add the field's name and the accepted form. Every pattern matches the whole value (``fullmatch``): a final
newline is not part of any name.
"""

from __future__ import annotations

import posixpath
import re

INSTANCE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,62}")
INSTANCE_NAME_FORM = "letters, digits, _ . - (a letter or digit first, at most 63 characters)"
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
ENV_NAME_FORM = "[A-Za-z_][A-Za-z0-9_]*"
COMPOSE_PROJECT = re.compile(r"[a-z0-9][a-z0-9_-]*")
COMPOSE_PROJECT_FORM = "lower-case letters, digits, _ and - (a letter or digit first)"
# A user or group name as useradd(8) takes it and systemd's User=/Group= read it (no "$": compose would expand it).
ACCOUNT = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,31}")
ACCOUNT_FORM = "a user or group name: a letter or _ first, then letters, digits, _ or - (at most 32)"
# The characters a directory of the collection may hold: it goes into unit directives (WorkingDirectory=,
# ReadWritePaths=, EnvironmentFile=, LoadCredential=) that split at blanks, read quotes and backslashes each their
# own way, and into compose files. "%" is allowed and written as "%%" (systemd's specifiers).
_PATH_CHARS = re.compile(r"[A-Za-z0-9._+@~,:=%/-]+")
PATH_FORM = ("an absolute, normalised path (no //, . or .. parts, no trailing /) of letters, digits and "
             "/ . _ + @ ~ , : = % - (no blanks, quotes, backslashes or control characters)")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# What one value may weigh: a unit line systemd reads is at most LONG_LINE_MAX (1 MiB); a path at most PATH_MAX.
TEXT_MAX = 64 * 1024
PATH_MAX = 4095


def utf8_problem(text: str) -> str:
    """Text that cannot be written as UTF-8 (a lone surrogate: an undecodable byte read with surrogateescape)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as err:
        return f"it is not valid UTF-8 (character {err.start})"
    return ""


def text_problem(text: str, limit: int = TEXT_MAX) -> str:
    """Free text (an environment value, a health command word): valid UTF-8, no NUL, bounded."""
    if "\0" in text:
        return "it holds a NUL character"
    if len(text) > limit:
        return f"it is {len(text)} characters long (at most {limit})"
    return utf8_problem(text)


def word_problem(text: str, limit: int = 1024) -> str:
    """One word (an image reference, a docker host): text without blanks or control characters."""
    if not text:
        return "it is empty"
    if _CONTROL.search(text) or re.search(r"\s", text):
        return "it holds a blank or a control character"
    return text_problem(text, limit)


def path_problem(path: str) -> str:
    """A directory or file path the collection writes into unit and compose files (PATH_FORM)."""
    if not path.startswith("/"):
        return "it is not absolute"
    if len(path) > PATH_MAX:
        return f"it is {len(path)} characters long (at most {PATH_MAX})"
    if not _PATH_CHARS.fullmatch(path):
        bad = sorted({char for char in path if not _PATH_CHARS.fullmatch(char)})
        return f"it holds {', '.join(repr(char) for char in bad[:5])}"
    if posixpath.normpath(path) != path or path.startswith("//"):
        return f"it is not normalised ({posixpath.normpath(path)!r})"
    return ""


def name_problem(pattern: re.Pattern, text: str) -> str:
    return "" if pattern.fullmatch(text) else "it does not have that form"


def number_text(number: float) -> str:
    """A bound as people write it: 1048576, 0.5 (not 1.04858e+06)."""
    return str(int(number)) if float(number).is_integer() else repr(float(number))


def int_problem(value: object, low: float, high: float) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return "it is not a number"
    if not low <= value <= high:
        return f"it is outside {number_text(low)} to {number_text(high)}"
    return ""
