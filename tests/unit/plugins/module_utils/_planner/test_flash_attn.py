"""A quantised V cache on an engine whose -fa is an off-by-default switch gets --flash-attn."""

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.facts import HostFacts
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.flash_attn import v_cache_flash_attn_args

SWITCH = "-fa,   --flash-attn                     enable Flash Attention (default: disabled)\n"
VALUED = "-fa,   --flash-attn [on|off|auto]       set Flash Attention use ('on', 'off', or 'auto', default: 'auto')\n"
PLACEHOLDER = "-fa,   --flash-attn FA                  set Flash Attention use\n"


@pytest.mark.parametrize(
    ("help_text", "preset", "extra", "env", "added"),
    [
        pytest.param(SWITCH, {"KV_TYPE": "q8_0"}, [], {}, True, id="old-q8"),
        pytest.param(SWITCH, {"KV_TYPE_V": "Q4_0"}, [], {}, True, id="old-v-only-any-case"),
        pytest.param(SWITCH, {"KV_TYPE_K": "q8_0"}, [], {}, False, id="old-k-only-ok"),
        pytest.param(SWITCH, {}, ["-ctv", "q5_1"], {}, True, id="old-v-from-extra"),
        pytest.param(SWITCH, {}, [], {"LLAMA_ARG_CACHE_TYPE_V": "q8_0"}, True, id="old-v-from-env"),
        pytest.param(SWITCH, {"KV_TYPE": "bf16"}, [], {}, False, id="old-bf16-plain"),
        pytest.param(SWITCH, {"KV_TYPE": "f32"}, [], {}, False, id="old-f32-plain"),
        pytest.param(SWITCH, {"KV_TYPE": "q8_0"}, ["-fa"], {}, False, id="user-fa"),
        pytest.param(SWITCH, {"KV_TYPE": "q8_0"}, ["--flash-attn"], {}, False, id="user-flash-attn"),
        pytest.param(SWITCH, {"KV_TYPE": "q8_0"}, [], {"LLAMA_ARG_FLASH_ATTN": "0"}, False, id="user-env"),
        pytest.param(VALUED, {"KV_TYPE": "q8_0"}, [], {}, False, id="new-engine-auto"),
        pytest.param(PLACEHOLDER, {"KV_TYPE": "q8_0"}, [], {}, False, id="value-placeholder"),
        pytest.param("", {"KV_TYPE": "q8_0"}, [], {}, False, id="unknown-engine"),
    ],
)
def test_v_cache_flash_attn(help_text, preset, extra, env, added):
    args, notes = v_cache_flash_attn_args(preset, extra, HostFacts(help=help_text, arg_env=env))
    assert args == (["--flash-attn"] if added else [])
    assert [n.id for n in notes] == (["fidelity.flash_attn"] if added else [])
