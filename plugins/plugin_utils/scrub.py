# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Masking secrets in a result on the controller (defence in depth: they should never be there)."""

from __future__ import annotations

from collections.abc import Mapping

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._inputs.secrets import API_KEY_MIN

MASK = "********"


def scrub(value, *secrets: str):
    """The value with every occurrence of each secret masked, through mappings and lists.

    A secret shorter than a key may be (secrets.API_KEY_MIN) is refused: masking it would mask that text wherever
    it stands, and the inputs' checks never let such a key through."""
    secrets = tuple(s for s in secrets if s)
    short = [s for s in secrets if len(s) < API_KEY_MIN]
    if short:
        raise ValueError(f"scrub: a secret of {len(short[0])} characters is too short to be one (at least "
                         f"{API_KEY_MIN}); it would mask that text everywhere")
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
