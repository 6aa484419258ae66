# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Masking secrets in a result on the controller (defence in depth: they should never be there)."""

from __future__ import annotations

from collections.abc import Mapping

MASK = "********"


def scrub(value, *secrets: str):
    """The value with every occurrence of each secret masked, through mappings and lists."""
    secrets = tuple(s for s in secrets if s)
    if not secrets:
        return value
    if isinstance(value, str):
        for secret in secrets:
            value = value.replace(secret, MASK)
        return value
    if isinstance(value, Mapping):
        return {k: scrub(v, *secrets) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [scrub(v, *secrets) for v in value]
    return value
