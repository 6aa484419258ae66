# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""``hostvars`` for one controller plugin call, each host's variables gathered once.

Each ``hostvars[host]`` gathers every variable of the host again (a few milliseconds in ansible-core 2.19): a plugin
that reads a host twice, or reads the fleet in two passes, pays that twice per host. Within one call the hosts'
variables do not change, so the first read of each host serves the others.
"""

from __future__ import annotations

from collections.abc import Mapping


class HostReads(Mapping):
    """``hostvars`` (any mapping of host name to variables) read once per host; what ``hostvars[host]`` gives is
    kept as it is, an undefined value for an unknown host included."""

    def __init__(self, hostvars: Mapping):
        self._hostvars = hostvars
        self._read: dict = {}

    def __getitem__(self, host):
        if host not in self._read:
            self._read[host] = self._hostvars[host]  # a KeyError is not kept: the next read asks again
        return self._read[host]

    def __iter__(self):
        return iter(self._hostvars)

    def __len__(self):
        return len(self._hostvars)

    def __contains__(self, host):
        return host in self._read or host in self._hostvars


def read_once(hostvars) -> Mapping:
    """``hostvars`` wrapped to be read once per host; anything that is not a mapping (a syntax check's empty value)
    or is wrapped already, as it is."""
    if isinstance(hostvars, HostReads) or not isinstance(hostvars, Mapping):
        return hostvars
    return HostReads(hostvars)
