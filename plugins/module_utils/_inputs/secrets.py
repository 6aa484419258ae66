# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where a secret could slip into what the collection writes, found by meaning rather than by one spelling.

Pure. The engine's flags and variables that carry a key or a token, in every spelling llama-server accepts
(measured on b11434 and llama-cpp-python 0.3.16's engine: ``--api_key`` and ``--api_key_file`` work as
``--api-key`` and ``--api-key-file``, as does ``-hft`` for ``--hf-token``; ``--api-key=KEY`` is refused, with
the key in its error message) and in those it refuses, so nothing near them passes; the names a preset or an
environment might give a secret under; and the form of an API key.
"""

from __future__ import annotations

import re

# Long names as the help prints them; the value is what the message calls the flag's secret.
SECRET_FLAGS = {
    "--api-key": "an API key",
    "--api-key-file": "the path of an API key file",
    "--hf-token": "a Hugging Face token",
    "-hft": "a Hugging Face token",
}
# Variable names that hold or point to a secret: the engine's own (LLAMA_API_KEY, LLAMA_ARG_API_KEY_FILE,
# HF_TOKEN) and any other name of that meaning (LLAMA_ARG_API_KEY, MY_API_KEY, api-key...): a unit's Environment=
# and a compose file are readable by others, so none of them is written there.
_SECRET_NAME = re.compile(r"API[^A-Z0-9]*KEY|HF[^A-Z0-9]*TOKEN", re.IGNORECASE)
# The preset keys a secret is taken from, each under its one name.
SECRET_PRESET_KEYS = ("API_KEY", "EXTERNAL_KEY")
# Preset keys that can only mean a secret, once folded (upper case, letters and digits only).
_SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "APITOKEN")

# One key per line in the engine's key file, where "," separates keys and "#" starts a comment.
API_KEY = re.compile(r"[A-Za-z0-9._~+/=:@-]+")
API_KEY_FORM = "letters, digits and . _ ~ + / = : @ - (no blanks, quotes, commas or '#')"
# A key shorter than this is no secret, and masking it would mask that text in every result.
API_KEY_MIN = 8
API_KEY_MAX = 4096


def secret_flag(word: str, table=None) -> str:
    """The secret flag (its long name) a command-line word names, "" for none.

    As llama.cpp reads a name (``_`` as ``-`` after ``--``), in any case, with or without ``=value``, and any
    other name the engine's help (``table``, a FlagTable) gives the same flag."""
    name = word.split("=", 1)[0] if word.startswith("-") else word
    folded = name.lower()
    if folded.startswith("--"):
        folded = folded.replace("_", "-")
    if folded in SECRET_FLAGS:
        return "--hf-token" if folded == "-hft" else folded
    spec = table.lookup(name) if table else None
    if spec is not None and set(spec.names) & set(SECRET_FLAGS):
        return spec.long_name
    return ""


def secret_flags_in(words, table=None) -> list[str]:
    """The secret flags the words name, in order (each long name once)."""
    found: list[str] = []
    for word in words:
        flag = secret_flag(str(word), table)
        if flag and flag not in found:
            found.append(flag)
    return found


def secret_variable(name: str) -> bool:
    """Whether a variable's name says it holds (or points to) a key or a token."""
    return bool(_SECRET_NAME.search(name))


def misspelt_secret_key(key: str) -> str:
    """The secret preset key a key looks like when it is not that key's one spelling, else "".

    ``API-KEY``, ``APIKEY``, ``LLAMA_API_KEY``, ``Api_Key `` and ``HF_TOKEN`` look like API_KEY, ``EXTERNAL-KEY``
    like EXTERNAL_KEY: refused on the controller rather than sent to a host as an unknown key."""
    if key in SECRET_PRESET_KEYS:
        return ""
    folded = re.sub(r"[^A-Z0-9]", "", key.upper())
    if "EXTERNAL" in folded and ("KEY" in folded or "TOKEN" in folded):
        return "EXTERNAL_KEY"
    if secret_variable(key) or folded in _SECRET_WORDS or folded.endswith("APIKEY"):
        return "API_KEY"
    return ""


def api_key_problem(key: str) -> str:
    """Why a key cannot be the engine's key ("" when it can); the key itself is never part of the answer."""
    if len(key) < API_KEY_MIN:
        return f"it is {len(key)} characters long: a key has at least {API_KEY_MIN}"
    if len(key) > API_KEY_MAX:
        return f"it is {len(key)} characters long (at most {API_KEY_MAX})"
    if not API_KEY.fullmatch(key):
        return f"it may only hold {API_KEY_FORM}: the engine reads one key per line and treats ',' and '#' specially"
    return ""


def preset_without_secrets(preset) -> tuple[dict, str]:
    """A preset as it may travel to a host, and its API key apart ("" for none): API_KEY and EXTERNAL_KEY (a remote
    API's key, never read at launch) out, in any case or surrounding blanks of their names."""
    kept, key = {}, ""
    for name, value in dict(preset or {}).items():
        folded = str(name).strip().upper()
        if folded == "API_KEY":
            key = "" if value is None else str(value).strip()
        elif folded != "EXTERNAL_KEY":
            kept[name] = value
    return kept, key
