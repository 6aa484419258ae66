"""The planner's refusal: a preset that cannot be planned, naming what is wrong.

Kept apart from planner.py so that every rule area can raise it; planner.py
re-exports it as ``planner.PlanError`` (the planner contract, docs/architecture.md).
"""

from __future__ import annotations

# What a refusal shows instead of a secret value.
HIDDEN = "<hidden>"


class PlanError(ValueError):
    """The preset cannot be planned (no binary, no model, a value the engine would refuse or misread).

    ``key`` is the preset key at fault (``EXTRA_ARGS`` for a word of it), ``value`` the value as written
    (``<hidden>`` for a secret), ``token`` the EXTRA_ARGS word at fault; each is "" when it does not apply.
    The message names them and the accepted form.
    """

    def __init__(self, message: str, key: str = "", value: str = "", token: str = ""):
        super().__init__(message)
        self.key = key
        self.value = value
        self.token = token
