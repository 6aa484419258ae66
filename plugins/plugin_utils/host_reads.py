# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""``hostvars`` for one controller plugin call, each host's variables gathered once, and read cheaply.

Each ``hostvars[host]`` gathers every variable of the host again (a few milliseconds in ansible-core 2.19): a plugin
that reads a host twice, or reads the fleet in two passes, pays that twice per host. Within one call the hosts'
variables do not change, so the first read of each host serves the others.

Each read of a variable of ``hostvars[host]`` is then templated whole by Ansible. From ansible-core 2.19 that walks
every value of it through the template engine, template or not: the fleet's fifty presets cost 10 to 15 ms per host,
and a run-once plugin that reads them on every host of a 1,000-host fleet pays that a thousand times. Here each
variable is read from the host's raw variables and templated by ``templated``: the same value, but only the strings
that can hold a template reach the engine, each distinct one once per host.
"""

from __future__ import annotations

from collections.abc import Mapping

from ansible import template
from ansible.template import Templar

from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils.templated import templated

# ansible-core 2.19 and later (the releases that trust templates) walk all of a value when they template it;
# before, hostvars are read as they are.
WALKS_EVERY_VALUE = hasattr(template, "is_trusted_as_template")


class HostVariables(Mapping):
    """One host's variables (``raw``: as ``hostvars.raw_get`` gives them, not templated), each templated when it is
    read, as ``hostvars[host][name]`` would give it, with ``templar`` (over ``raw``)."""

    def __init__(self, raw: Mapping, templar):
        self._raw = raw
        self._templar = templar
        self._strings: dict = {}  # each distinct string of this host's variables templated once

    def __getitem__(self, name):
        return templated(self._templar, self._raw[name], self._strings)

    def __iter__(self):
        return iter(self._raw)

    def __len__(self):
        return len(self._raw)

    def __contains__(self, name):
        return name in self._raw


class HostReads(Mapping):
    """``hostvars`` (any mapping of host name to variables) read once per host; what ``hostvars[host]`` gives is
    kept as it is, an undefined value for an unknown host included. Ansible's own ``hostvars`` on ansible-core 2.19
    and later gives each host as HostVariables instead (the same values, templated more cheaply)."""

    def __init__(self, hostvars: Mapping):
        self._hostvars = hostvars
        self._read: dict = {}
        self._raw_get = getattr(hostvars, "raw_get", None) if WALKS_EVERY_VALUE else None

    def __getitem__(self, host):
        if host not in self._read:
            self._read[host] = self._host(host)  # a KeyError is not kept: the next read asks again
        return self._read[host]

    def _host(self, host):
        if self._raw_get is None:
            return self._hostvars[host]
        raw = self._raw_get(host)
        if not isinstance(raw, Mapping):
            return raw  # an unknown host: the undefined value hostvars[host] gives too
        # The loader hostvars templates with (lookups find their files through it).
        return HostVariables(raw, Templar(loader=getattr(self._hostvars, "_loader", None), variables=raw))

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
