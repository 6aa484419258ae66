"""Value types the planner reads: what the probes saw on one host.

Pure data, no I/O. Every field defaults to "unknown" (0, empty, None) and
every planning rule treats unknown as "take no risk, keep the engine default".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class CpuBudget:
    """Threads a confined container should use (spec section 7.2).

    ``n`` is the budget, ``engine`` what llama.cpp would start on its own,
    ``why`` a short English reason shown in the thread note.
    """

    n: int = 0
    engine: int = 0
    why: str = ""


@dataclass(frozen=True)
class SplitDev:
    """One device as ``llama-server --list-devices`` reports it."""

    id: str
    total_mib: int


@dataclass(frozen=True)
class GGUFInfo:
    """GGUF metadata the rules need (spec section 4.3)."""

    version: int = 0
    arch: str = ""
    block_count: int = 0
    nextn: int = 0
    context_length: int = 0
    expert_count: int = 0
    key_len: int = 0
    val_len: int = 0
    full_attn_interval: int = 0
    embedding_length: int = 0
    head_count: int = 0
    head_count_kv: int = 0
    head_count_kv_layers: tuple[int, ...] = ()
    ssm_conv: int = 0
    ssm_inner: int = 0
    ssm_state: int = 0
    ssm_groups: int = 0
    hybrid: bool = False
    has_nextn_tensor: bool = False
    tensor_count: int = 0
    # What the memory estimate reads: the vocabulary (the logits' width), the sliding window of SWA layers, the
    # feed-forward width, and the tensor data's bytes per block, of the input embeddings and of the rest.
    vocab_size: int = 0
    sliding_window: int = 0
    feed_forward_length: int = 0
    layer_bytes: tuple[int, ...] = ()
    embed_bytes: int = 0
    other_bytes: int = 0
    # Whether the file has a default chat template (``tokenizer.chat_template``); None: not read (the engine then
    # falls back to ChatML in silence, docs/planner.md, CHAT_TEMPLATE).
    has_chat_template: bool | None = None


@dataclass(frozen=True)
class HostFacts:
    """Everything the probes learnt about one host (spec section 1.2).

    ``arg_env`` / ``user_env`` hold the LLAMA_ARG_* and GGML_* variables of the
    environment the *service* will run with, never the Ansible process's own.
    ``api_key_file`` is the path the engine reads its key from; non-empty means
    a key is in effect.
    """

    help: str = ""
    bin: str = ""
    model: str = ""
    mmproj: str = ""
    api_key_file: str = ""
    cpu: CpuBudget | None = None
    launch_queues: str = ""
    gpus: int = 0
    arg_env: Mapping[str, str] = field(default_factory=dict)
    user_env: Mapping[str, str] = field(default_factory=dict)
    gguf: GGUFInfo | None = None
    model_bytes: int = 0
    ram_mib: int = 0
    ram_avail_mib: int = 0
    vram_mib: int = 0
    unified_mem: bool = False
    engine_vram_mib: int = 0
    slot_dir: str = ""
    engine_build: int = 0
    draft: str = ""
    draft_err: str = ""
    draft_gguf: GGUFInfo | None = None
    draft_is_model: bool = False
    spec_auto_blocked: str = ""
    split_devs: tuple[SplitDev, ...] = ()
    mmproj_bytes: int = 0
    # The device names the engine lists (--list-devices), when it was asked: the names -dev, --device and the
    # buffer types of -ot may use. None: not asked or no answer, so nothing is checked against it.
    engine_devices: tuple[str, ...] | None = None
