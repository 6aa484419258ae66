# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The attributes the collection's plugins share, with their most common support; a plugin states only where it
differs (its own C(attributes:) entries are merged over these)."""

from __future__ import annotations


class ModuleDocFragment:
    # A module that runs on the target.
    DOCUMENTATION = r"""
attributes:
  check_mode:
    description: Can run in check mode and predict its result without changing the target.
    support: full
  diff_mode:
    description: Returns the change of the files it manages (or would, in check mode) in diff mode.
    support: none
  platform:
    description: Target systems it runs on.
    support: full
    platforms: posix
"""

    # An action plugin: runs on the controller and calls modules on the target. Used with the default above,
    # whose entries it adds to (Ansible merges the attributes of every fragment a plugin names).
    ACTION = r"""
attributes:
  action:
    description: Runs on the controller (an action plugin), and calls the collection's modules on the target.
    support: full
  async:
    description: Cannot run asynchronously.
    support: none
"""

    # An action that runs on the controller alone (plugin_utils/controller_action.py), with the two above.
    CONTROLLER = r"""
attributes:
  action:
    details: Runs on the controller only; nothing is sent to a host.
  platform:
    details: The controller.
"""
