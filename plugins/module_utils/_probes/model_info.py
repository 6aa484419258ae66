# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What ``gguf_info`` reports of a model file: its shard family, whether it is complete, its size, and what its
header says (architecture, context, layers, heads, KV-cache bytes per token, recurrent state, MoE / MTP flags).

Read-only: the header is read by ``gguf_header.py`` (never the weights), the bytes per token are the planner's own
(``_planner/recurrent_state.py``), so the module reports what a plan would use.
"""

from __future__ import annotations

import os

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.recurrent_state import is_hybrid, state_bytes
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.gguf_header import (
    GGUFError,
    read_gguf_info,
    shard_family,
    shard_family_missing,
    shard_family_size,
)


def model_info(path: str, fail_on_incomplete: bool) -> tuple[dict, str]:
    """(the module's result fields, why it fails or ""). The shard fields are always there; the header's only when
    every shard is present and the file reads. A missing shard fails only with ``fail_on_incomplete``."""
    directory, name = os.path.dirname(path) or ".", os.path.basename(path)
    missing = shard_family_missing(directory, name)
    result = {
        "path": path,
        "shards": shard_family(name),
        "missing_shards": missing,
        "complete": not missing,
        "size_bytes": shard_family_size(directory, name),
    }
    if not os.path.isfile(path):
        return result, f"model not found: {path}"
    if missing:
        if fail_on_incomplete:
            return result, (f"incomplete model: missing {', '.join(missing)} in {directory} — this model has "
                            f"{len(result['shards'])} files, download them all")
        return result, ""
    try:
        info = read_gguf_info(path)
    except GGUFError as err:
        return result, f"{path}: not a readable GGUF file: {err}"
    f16_per_token, recurrent = state_bytes(info, "f16", "f16")
    q8_per_token = state_bytes(info, "q8_0", "q8_0")[0]
    result.update(
        arch=info.arch,
        context_length=info.context_length,
        block_count=info.block_count,
        head_count=info.head_count,
        head_count_kv=info.head_count_kv,
        embedding_length=info.embedding_length,
        expert_count=info.expert_count,
        kv_bytes_per_token={"f16": round(f16_per_token), "q8_0": round(q8_per_token)},
        recurrent_state_bytes=recurrent,
        hybrid=is_hybrid(info),
        moe=info.expert_count > 0,
        mtp=info.has_nextn_tensor,
        has_chat_template=bool(info.has_chat_template),
        tensor_count=info.tensor_count,
        gguf_version=info.version,
    )
    return result, ""
