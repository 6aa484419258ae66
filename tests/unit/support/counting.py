"""Mappings that count their reads: a controller plugin's reads of hostvars (each read of a host's variables costs
Ansible a lookup of them all) or of one host's variables (each key read is templated again)."""

from __future__ import annotations


class CountingDict(dict):
    """A dict that records each key read through ``[]`` or ``get`` in ``read``, in order."""

    def __init__(self, *args):
        super().__init__(*args)
        self.read = []

    def __getitem__(self, key):
        self.read.append(key)
        return super().__getitem__(key)

    def get(self, key, default=None):
        self.read.append(key)
        return super().get(key, default)
