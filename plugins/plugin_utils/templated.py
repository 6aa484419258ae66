# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A host's variable templated by a controller plugin, each distinct string once.

Ansible compiles a Jinja template each time it meets one, with no cache: a fleet-wide list (the fleet's
deployments, say) that carries the same ``{{ ansible_host }}`` in each of its fifty items costs fifty compiles on
every host it is templated for. Templating each distinct string once gives the same value (a template's value
depends on the host's variables, not on where in the list it sits) for a fraction of that.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping

try:  # ansible-core 2.19 and later: a string is templated only when trusted (unsafe: not trusted)
    from ansible.template import is_trusted_as_template
except ImportError:  # before: a string marked unsafe has a type of its own
    def is_trusted_as_template(value) -> bool:
        del value
        return True


# Values Ansible's templating gives back as they are.
PLAIN = (bool, int, float, type(None))


def templated(templar, value, cache: dict | None = None):
    """``value`` (a variable as the host's variables hold it, not templated yet) templated with ``templar`` (the
    host's), each distinct string once: mappings become dicts and lists lists, their keys kept as they are (Ansible
    templates no key); a string's value is its template's. ``cache`` (string -> value) may be shared between calls
    with the same templar."""
    cache = {} if cache is None else cache
    if isinstance(value, str) and "{" not in value:
        return value  # no template starts without "{" ({{, {% or {#): nothing to ask Ansible
    if isinstance(value, str):
        # A string marked unsafe (never templated) is not the same string as its trusted twin.
        key = (type(value), is_trusted_as_template(value), value)
        if key not in cache:
            cache[key] = templar.template(value)
            return cache[key]
        found = cache[key]
        # A template may give a container: each place gets its own copy.
        return found if isinstance(found, str) else copy.deepcopy(found)
    if isinstance(value, Mapping):
        return {name: templated(templar, item, cache) for name, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [templated(templar, item, cache) for item in value]
    if isinstance(value, PLAIN):
        return value
    return templar.template(value)  # anything else (a vaulted string, say) as Ansible reads it: decrypted
