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
has_chat_template:
  description:
    - The file has a default chat template (C(tokenizer.chat_template)). Without one, llama-server formats chat
      requests as ChatML without saying so (the preset key C(CHAT_TEMPLATE) gives one).
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

from ansible.module_utils.basic import AnsibleModule  # noqa: E402

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.model_info import model_info  # noqa: E402


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "path": {"type": "path", "required": True},
            "fail_on_incomplete": {"type": "bool", "default": True},
        },
        supports_check_mode=True,
    )
    info, failure = model_info(module.params["path"], module.params["fail_on_incomplete"])
    result = {"changed": False, **info}
    if failure:
        module.fail_json(msg=failure, **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
