#!/usr/bin/python
# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: gguf_info
short_description: GGUF metadata and shard completeness of a model file
version_added: "0.1.0"
description:
  - Reads the header of a GGUF model (never the weights) and reports what deployment decisions need, that is
    the architecture, training context, layers, attention heads, KV-cache bytes per token, hybrid / MoE / MTP
    flags, size, and for split models whether every shard is present.
  - Reading is bounded; a truncated or hostile file is reported as unreadable, never loaded.
author:
  - llamafleet maintainers (@llamafleet)
extends_documentation_fragment:
  - llamafleet.llamacpp.attributes
options:
  path:
    description:
      - Path of the C(.gguf) file on the target. For a split model any shard may be given
        (C(name-00001-of-00003.gguf)).
    type: path
    required: true
  fail_on_incomplete:
    description:
      - Fail when shards of a split model are missing (their names are in the message). With V(false) they are
        returned in RV(missing_shards) and the metadata, which needs every shard, is not read.
    type: bool
    default: true
requirements:
  - gguf
attributes:
  check_mode:
    details: Read-only.
seealso:
  - module: llamafleet.llamacpp.llama_server_plan
"""

EXAMPLES = r"""
- name: Inspect a model
  llamafleet.llamacpp.gguf_info:
    path: /srv/models/gemma-3-270m-it-Q4_K_M.gguf
  register: model

- name: Show its context length
  ansible.builtin.debug:
    msg: "{{ model.arch }} trained for {{ model.context_length }} tokens"
"""

RETURN = r"""
path:
  description: The file that was read.
  returned: always
  type: str
arch:
  description: C(general.architecture), e.g. C(llama), C(gemma3), C(qwen3moe).
  returned: when every shard is present
  type: str
context_length:
  description: Training context in tokens.
  returned: when every shard is present
  type: int
block_count:
  description: Number of layers.
  returned: when every shard is present
  type: int
head_count:
  description: Attention heads.
  returned: when every shard is present
  type: int
head_count_kv:
  description: KV heads (the largest value when the file lists one per layer).
  returned: when every shard is present
  type: int
embedding_length:
  description: Hidden size.
  returned: when every shard is present
  type: int
expert_count:
  description: MoE experts (0 for a dense model).
  returned: when every shard is present
  type: int
kv_bytes_per_token:
  description: KV-cache bytes per token of context for one sequence, by cache type (0 when unknown).
  returned: when every shard is present
  type: dict
  sample: {f16: 36864, q8_0: 19584}
recurrent_state_bytes:
  description: Recurrent (SSM) state bytes of one sequence for a hybrid model, else 0.
  returned: when every shard is present
  type: int
hybrid:
  description: The model mixes attention and recurrent layers.
  returned: when every shard is present
  type: bool
moe:
  description: The model is a mixture of experts.
  returned: when every shard is present
  type: bool
mtp:
  description: The file carries a multi-token-prediction head (usable by C(SPEC=mtp)).
  returned: when every shard is present
  type: bool
tensor_count:
  description: Tensors over all shards.
  returned: when every shard is present
  type: int
gguf_version:
  description: GGUF format version.
  returned: when every shard is present
  type: int
size_bytes:
  description: Bytes of all present shards.
  returned: always
  type: int
shards:
  description: File names of the model's family (one name for a single-file model).
  returned: always
  type: list
  elements: str
missing_shards:
  description: Shards of the family absent from the directory.
  returned: always
  type: list
  elements: str
complete:
  description: Every shard is present.
  returned: always
  type: bool
"""

import os  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.recurrent_state import is_hybrid, state_bytes  # noqa: E402
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.gguf_header import (  # noqa: E402
    GGUFError,
    read_gguf_info,
    shard_family,
    shard_family_missing,
    shard_family_size,
)


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "path": {"type": "path", "required": True},
            "fail_on_incomplete": {"type": "bool", "default": True},
        },
        supports_check_mode=True,
    )
    path = module.params["path"]
    directory, name = os.path.dirname(path) or ".", os.path.basename(path)
    missing = shard_family_missing(directory, name)
    result = {
        "changed": False,
        "path": path,
        "shards": shard_family(name),
        "missing_shards": missing,
        "complete": not missing,
        "size_bytes": shard_family_size(directory, name),
    }
    if not os.path.isfile(path):
        module.fail_json(msg=f"model not found: {path}", **result)
    if missing:
        if module.params["fail_on_incomplete"]:
            module.fail_json(
                msg=f"incomplete model: missing {', '.join(missing)} in {directory} — this model has "
                f"{len(result['shards'])} files, download them all",
                **result,
            )
        module.exit_json(**result)
    try:
        info = read_gguf_info(path)
    except GGUFError as err:
        module.fail_json(msg=f"{path}: not a readable GGUF file: {err}", **result)
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
        tensor_count=info.tensor_count,
        gguf_version=info.version,
    )
    module.exit_json(**result)


if __name__ == "__main__":
    main()
