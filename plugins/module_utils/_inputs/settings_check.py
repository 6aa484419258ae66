# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Settings checked against their forms and ranges (the ``form`` and ``bounds`` of a table, ``_layout/settings.py``).

Pure; one set of forms for both roles. The instance actions, the host judge and the modules all call
``settings_errors`` before anything is written: a module used alone refuses what the role refuses. A message names
the role variable and the setting, the value and the accepted form. The gateway's settings reach
``gateway_settings`` untyped (the module's argument spec is not the only way in), so ``typed_value`` checks their
types too.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._gateway.fleet_routes import (
    MODEL_NAME,
    MODEL_NAME_FORM,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._inputs import grammar, secrets
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._layout.settings import SETTINGS, Setting

_FORMS = {
    "path": grammar.PATH_FORM,
    "path or empty": "empty, or " + grammar.PATH_FORM,
    "account": grammar.ACCOUNT_FORM,
    "account or empty": "empty, or " + grammar.ACCOUNT_FORM,
    "address": "an IP address (0.0.0.0 or :: for every address)",
    "model or empty": "empty, or " + MODEL_NAME_FORM,
    "keys": f"keys of {secrets.API_KEY_FORM}, at least {secrets.API_KEY_MIN} characters each",
    "project": grammar.COMPOSE_PROJECT_FORM,
    "word": "one word: no blanks or control characters",
    "word or empty": "empty, or one word: no blanks or control characters",
    "command": "a command: its words valid UTF-8 without NUL (a program name or an absolute path first)",
    "auto or switch": "auto, or a switch: true/false, yes/no, on/off, 1/0",
    "environment": f"variable names {grammar.ENV_NAME_FORM}, none that names a key or token, values valid UTF-8 "
                   "without NUL",
}


def _label(setting: Setting) -> str:
    return f"{setting.role_variable} (settings.{setting.name})"


def _shown(value) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


def _command_problem(words) -> str:
    words = [words] if isinstance(words, str) else list(words)
    if not words:
        return "it is empty"
    first = str(words[0])
    if not first or (first.startswith("/") and grammar.path_problem(first)) or grammar.word_problem(first):
        return f"its program {first!r} is not a program name or an absolute path"
    return next((f"word {i}: {why}" for i, word in enumerate(words)
                 if (why := grammar.text_problem(str(word), 4096))), "")


def environment_problem(environment) -> str:
    """A service environment (names and values): the same rules for the role's and an instance's."""
    if not isinstance(environment, Mapping):
        return "it is not a mapping of variable names to values"
    for key, value in environment.items():
        name = str(key)
        if not grammar.ENV_NAME.fullmatch(name):
            return f"the name {name!r} is not a variable name"
        if secrets.secret_variable(name):
            return (f"{name} names a key or a token: it would be written into a unit or compose file others can "
                    "read; give the key as an instance's api_key (it reaches the engine as a root-only file)")
        why = grammar.text_problem("" if value is None else str(value))
        if why:
            return f"the value of {name}: {why}"
    return ""


_SWITCH_WORDS = ("auto", "1", "true", "yes", "on", "0", "false", "no", "off")


def _address_problem(text: str) -> str:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return "it is not an IP address"
    return ""


def _form_problem(form: str, value) -> str:
    if form == "keys":  # the first refused key's reason, never the key
        return next((why for key in value if (why := secrets.api_key_problem(str(key)))), "")
    if form == "auto or switch":
        # A misspelt word would silently mean "no" (no GPU rules, no reservation).
        return "" if isinstance(value, bool) or str(value).strip().lower() in _SWITCH_WORDS else "it is neither"
    if form == "environment":
        return environment_problem(value)
    if form == "command":
        return _command_problem(value)
    values = value if isinstance(value, (list, tuple)) else [value]
    for item in values:
        text = "" if item is None else str(item)
        if form.endswith("or empty") and not text:
            continue
        why = {
            "path": grammar.path_problem, "path or empty": grammar.path_problem,
            "account": lambda t: grammar.name_problem(grammar.ACCOUNT, t),
            "account or empty": lambda t: grammar.name_problem(grammar.ACCOUNT, t),
            "address": _address_problem,
            "model or empty": lambda t: grammar.name_problem(MODEL_NAME, t),
            "project": lambda t: grammar.name_problem(grammar.COMPOSE_PROJECT, t),
            "word": grammar.word_problem, "word or empty": grammar.word_problem,
        }[form](text)
        if why:
            return why if len(values) == 1 else f"{text!r}: {why}"
    return ""


def setting_problem(setting: Setting, value) -> str:
    """The message for one setting's value, "" when it is usable."""
    if setting.bounds is not None:
        why = grammar.int_problem(value, *setting.bounds)
        low, high = setting.bounds
        form = f"a number from {grammar.number_text(low)} to {grammar.number_text(high)}"
    elif setting.form:
        why, form = _form_problem(setting.form, value), _FORMS[setting.form]
    else:
        return ""
    if not why:
        return ""
    if setting.secret:
        shown = "(a secret, not shown)"
    elif setting.form == "environment" and isinstance(value, Mapping):
        # An environment's values are not shown: one of them may be the secret it was refused for.
        shown = f"(variables {', '.join(map(str, value))})"
    else:
        shown = f"= {_shown(value)}"
    return f"{_label(setting)} {shown}: {why}; accepted: {form}"


def settings_errors(settings: Mapping, table: tuple[Setting, ...] = SETTINGS) -> list[str]:
    """Every setting whose value does not have its form; those absent from ``settings`` are not checked."""
    return [problem for setting in table if setting.name in settings
            if (problem := setting_problem(setting, settings[setting.name]))]


def _is_whole(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


# Each type: whether a value has it, and the words for it.
_TYPES = {
    "str": (lambda value: isinstance(value, str), "a string"),
    "int": (_is_whole, "a whole number"),
    "float": (lambda value: _is_whole(value) or isinstance(value, float), "a number"),
    "bool": (lambda value: isinstance(value, bool), "true or false"),
    "list": (lambda value: isinstance(value, (list, tuple)) and all(isinstance(item, str) for item in value),
             "a list of strings"),
    "dict": (lambda value: isinstance(value, Mapping), "a mapping"),
    "raw": (lambda _value: True, ""),
}


def typed_value(setting: Setting, value) -> tuple[object, str]:
    """The value in its setting's type (a list as a tuple), and what was expected instead ("" when it is usable):
    the type, the range, then the form. A secret's form says why, since its value is never shown."""
    has_type, words = _TYPES[setting.type]
    if not has_type(value):
        return value, words
    if setting.bounds is not None and not setting.bounds[0] <= value <= setting.bounds[1]:
        return value, f"{words} from {setting.bounds[0]} to {setting.bounds[1]}"
    typed = tuple(value) if setting.type == "list" else value
    why = _form_problem(setting.form, value) if setting.form else ""
    if not why:
        return typed, ""
    return value, f"{_FORMS[setting.form]} ({why})" if setting.secret else _FORMS[setting.form]
