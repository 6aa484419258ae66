# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whether a planned instance may be deployed as it listens: no server open beyond loopback without a key."""

from __future__ import annotations

from ansible_collections.llamafleet.llamacpp.plugins.module_utils.planner import Decisions


def open_server_refusal(name: str, decisions: Decisions, key: str, allow_open: bool) -> str:
    """Why this plan may not be deployed as it is (a server open beyond loopback without a key); "" when it may."""
    if decisions.loopback_only or key or allow_open:
        return ""
    return (f"instance {name} would listen on {decisions.host} (beyond loopback) without an API key. Give "
            "it an api_key (vault), listen on 127.0.0.1, or set llama_server_allow_open: true to accept an open "
            "server.")
