"""Public GGUF reader of the collection: the import path other code may rely on.

The header walk itself lives in the private ``_probes/gguf_header.py``; this façade keeps the names the contract
promises (docs/architecture.md, "GGUF metadata") and a few helpers the modules share.
"""

from __future__ import annotations

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.gguf_header import (
    GGUFError,
    clear_cache,
    is_follower_shard,
    missing_shards_message,
    read_gguf_info,
    shard_family,
    shard_family_missing,
    shard_family_size,
    shard_info,
)

__all__ = [
    "GGUFError",
    "clear_cache",
    "is_follower_shard",
    "missing_shards_message",
    "read_gguf_info",
    "shard_family",
    "shard_family_missing",
    "shard_family_size",
    "shard_info",
]
