# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whether a gateway already has what its role would give it, from what its host's judge read in the same run.

Pure. The reading (_converge/gateway.gateway_reading) holds digests, never the files: the controller renders what the
role would write (_gateway/config_file.py) and compares. A gateway is current when its configuration, routes file and
Lua actions are those, the servers' states file is there, HAProxy runs and starts at boot, and none of the servers
this run verified is out of its rotation: the role would then change nothing, and the deploy playbook does not run it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence


def digest(content: str | bytes) -> str:
    """The SHA-256 of a text (as UTF-8) or of a file's bytes: the host's reading and the controller's rendering
    compare by it."""
    return hashlib.sha256(content.encode("utf-8") if isinstance(content, str) else content).hexdigest()


def gateway_judgement(reading: Mapping | None, *, config: str, routes_file: str, lua: str,
                      verified: Sequence[str], keep_hosts: Sequence[str] = ()) -> list[str]:
    """Why the gateway role has work on this gateway, first things first; empty when it has none. ``config``,
    ``routes_file`` and ``lua``: the texts the role would write; ``verified``: the server names of the instances this
    run found running their plans; ``keep_hosts``: hosts whose servers the gateway keeps as it has them (its routes
    file then decides what is written, and only the role reads it)."""
    if reading is None:
        return ["its host was not read in this run's judge"]
    if keep_hosts:
        return [f"it keeps the servers of hosts this run has not finished: {', '.join(keep_hosts)}"]
    why = []
    if reading.get("config") != digest(config):
        why.append("its configuration would change")
    if reading.get("routes") != digest(routes_file):
        why.append("its routes file would change")
    if reading.get("lua") != digest(lua) or not reading.get("lua_kept"):
        why.append("its Lua actions would change")
    if not reading.get("state_file"):
        why.append("the file of its servers' states is missing")
    if not reading.get("running"):
        why.append("HAProxy is not running, or does not start at boot")
    elif not reading.get("answered"):
        why.append("HAProxy's runtime API did not answer")
    else:
        out = sorted(set(verified) & set(reading.get("out_of_rotation") or []))
        if out:
            why.append(f"verified servers are out of rotation: {', '.join(out)}")
    return why
