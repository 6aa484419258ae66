"""Make this checkout importable as ansible_collections.llamafleet.llamacpp.

Ansible imports collection code by that dotted path; tests do the same through
a symlink tree under .collections/ (git-ignored), so no install step is needed.
"""

import os
import sys

_ROOT = os.path.dirname(os.path.abspath(__file__))
_TREE = os.path.join(_ROOT, ".collections")
_LINK = os.path.join(_TREE, "ansible_collections", "llamafleet", "llamacpp")


def collection_path() -> str:
    """Make the symlink tree and put it on sys.path (once); return the tree's path."""
    if not os.path.islink(_LINK):
        os.makedirs(os.path.dirname(_LINK), exist_ok=True)
        os.symlink(_ROOT, _LINK)
    if _TREE not in sys.path:
        sys.path.insert(0, _TREE)
    return _TREE


collection_path()
