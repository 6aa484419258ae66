#!/usr/bin/python
# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: llama_server_lock
short_description: Hold a host for one rollout at a time
version_added: "0.2.0"
description:
  - Takes or releases the host's rollout lock, a small JSON file naming its holder (the controller, its
    C(ansible-playbook) process and when it started). A second rollout fails fast, naming the holder.
  - The lock is taken over when its holder is gone. The action part of this plugin (on the controller) sees
    whether a holder on the same controller still runs; a holder from another controller is gone once its lease
    (O(lease_s)) has passed. So an interrupted rollout (Ctrl-C, a lost controller) never blocks the host for good.
  - The file lives in C(/run) by default, so a reboot clears it.
author:
  - llamafleet maintainers (@llamafleet)
extends_documentation_fragment:
  - llamafleet.llamacpp.attributes
  - llamafleet.llamacpp.attributes.action
options:
  state:
    description: V(acquired) takes the lock (or keeps it, for the same holder); V(released) gives it back.
    type: str
    choices: [acquired, released]
    default: acquired
  path:
    description: The lock file on the target.
    type: path
    default: /run/llamafleet/rollout.lock
  lease_s:
    description: Seconds after which a lock taken by another controller counts as abandoned. From 60 to 604800.
    type: int
    default: 21600
  holder:
    description:
      - Who takes the lock. Filled in by the action from the controller (C(controller), C(pid), C(pid_start),
        C(user), C(playbook)); only C(playbook) is worth setting by hand.
    type: dict
    default: {}
  take_over:
    description:
      - The id of a holder known to be gone (set by the action after it checked the holder's process on this
        controller). The lock is taken only if that holder still has it.
    type: str
    default: ""
notes:
  - Only the Python standard library is used on the target.
attributes:
  action:
    details: The action part fills in the holder and checks, on the controller, whether a holder is alive.
  check_mode:
    details: Fails when another live rollout holds the host, and writes nothing.
"""

EXAMPLES = r"""
- name: Hold this host for the rollout
  llamafleet.llamacpp.llama_server_lock:
    holder: {playbook: deploy-llm.yml}

- name: Let it go
  llamafleet.llamacpp.llama_server_lock:
    state: released
"""

RETURN = r"""
holder:
  description: The lock's holder after this run (empty once released).
  returned: always
  type: dict
previous:
  description: A holder whose lock was taken over (gone, or its lease ran out).
  returned: when a lock was taken over
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._converge.rollout_lock import (  # noqa: E402
    LeaseRefused,
    hold,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._judgements.rollout_lock import (  # noqa: E402
    LockHeld,
    holder_id,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._layout.paths import (  # noqa: E402
    LOCK_LEASE_S,
    LOCK_PATH,
)


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "state": {"type": "str", "choices": ["acquired", "released"], "default": "acquired"},
            "path": {"type": "path", "default": LOCK_PATH},
            "lease_s": {"type": "int", "default": LOCK_LEASE_S},
            "holder": {"type": "dict", "default": {}},
            "take_over": {"type": "str", "default": ""},
        },
        supports_check_mode=True,
    )
    try:
        result = hold(module.params, module.check_mode)
    except LeaseRefused as err:
        module.fail_json(msg=str(err))
    except LockHeld as held:
        module.fail_json(msg=str(held), holder=held.holder, holder_id=holder_id(held.holder), locked=True)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
