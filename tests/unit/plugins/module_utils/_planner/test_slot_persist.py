"""SLOT_PERSIST plan and refusal note: spec section 12.3."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.facts import GGUFInfo, HostFacts
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.slot_persist import (
    slot_persist_note,
    slot_persist_plan,
)

HELP = "--slot-save-path PATH  --cache-ram N"
SLOT_DIR = "/var/lib/llamafleet/slots"
OK_FACTS = HostFacts(help=HELP, slot_dir=SLOT_DIR, gguf=GGUFInfo(block_count=48))
OK_PRESET = {"SLOT_PERSIST": "on", "HOST": "127.0.0.1"}

R_EXTERNAL = "external preset"
R_HELP = "this engine does not know --slot-save-path"
R_MANUAL = "--slot-save-path is already set by hand"
R_DIR = "slot directory unavailable"
R_SPEC = "speculative decoding: the engine's save does not keep the draft state"
R_SPLIT = "SPLIT_MODE: state spread across cards, saving not validated"
R_UNSAFE = "engine reachable by others without an API key (HOST=127.0.0.1 or an API key)"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param(None, (False, ""), id="absent"),
        pytest.param("", (False, ""), id="empty"),
        pytest.param("off", (False, ""), id="off"),
        pytest.param("maybe", (False, ""), id="unknown-word"),
        pytest.param("on", (True, ""), id="on"),
        pytest.param("ON", (True, ""), id="ON"),
        pytest.param("1", (True, ""), id="one"),
        pytest.param("true", (True, ""), id="true"),
        pytest.param(" Yes ", (True, ""), id="yes-spaced"),
        pytest.param("oui", (True, ""), id="oui"),
    ],
)
def test_slot_persist_key_forms(value, expected):
    preset = {"HOST": "127.0.0.1"}
    if value is not None:
        preset["SLOT_PERSIST"] = value
    assert slot_persist_plan(preset, [], OK_FACTS) == expected


def test_slot_persist_key_off_is_silent_even_when_everything_else_would_refuse():
    assert slot_persist_plan({"EXTERNAL": "1", "SPEC": "mtp"}, [], HostFacts()) == (False, "")


def test_every_refusal_in_order():
    """Start with every check failing, then fix them one at a time: the reason moves down the list."""
    preset = {
        "SLOT_PERSIST": "on",
        "EXTERNAL": "1",
        "SPEC": "mtp",
        "SPLIT_MODE": "tensor",
        "HOST": "0.0.0.0",
        "NGL": "20",
    }
    extra = ["--slot-save-path", "/tmp/slots"]
    host = HostFacts(help="", slot_dir="", gguf=GGUFInfo(block_count=48))
    steps = []
    steps.append(slot_persist_plan(preset, extra, host))
    preset["EXTERNAL"] = "0"
    steps.append(slot_persist_plan(preset, extra, host))
    host = replace(host, help=HELP)
    steps.append(slot_persist_plan(preset, extra, host))
    extra = []
    steps.append(slot_persist_plan(preset, extra, host))
    host = replace(host, slot_dir=SLOT_DIR)
    steps.append(slot_persist_plan(preset, extra, host))
    preset["SPEC"] = "off"
    steps.append(slot_persist_plan(preset, extra, host))
    preset["SPLIT_MODE"] = "layer"
    steps.append(slot_persist_plan(preset, extra, host))
    preset["HOST"] = "127.0.0.1"
    steps.append(slot_persist_plan(preset, extra, host))
    preset["NGL"] = "999"
    steps.append(slot_persist_plan(preset, extra, host))
    assert steps == [
        (False, R_EXTERNAL),
        (False, R_HELP),
        (False, R_MANUAL),
        (False, R_DIR),
        (False, R_SPEC),
        (False, R_SPLIT),
        (False, R_UNSAFE),
        (False, "GPU layers limited to 20"),
        (True, ""),
    ]


@pytest.mark.parametrize(
    ("changes", "extra", "arg_env", "why"),
    [
        pytest.param({"EXTERNAL": " 1 "}, [], {}, R_EXTERNAL, id="external"),
        pytest.param({}, ["--slot-save-path", "/x"], {}, R_MANUAL, id="extra-flag"),
        pytest.param({}, ["--slot-save-path=/x"], {}, R_MANUAL, id="extra-flag-equals"),
        pytest.param({}, [], {"LLAMA_ARG_SLOT_SAVE_PATH": "/x"}, R_MANUAL, id="env-slot-save-path"),
        # Speculation: any readable non-off SPEC, an unreadable one, or set by hand.
        pytest.param({"SPEC": "auto"}, [], {}, R_SPEC, id="spec-auto"),
        pytest.param({"SPEC": "mtp"}, [], {}, R_SPEC, id="spec-mtp"),
        pytest.param({"SPEC": "NGRAM"}, [], {}, R_SPEC, id="spec-ngram"),
        pytest.param({"SPEC": "garbage"}, [], {}, R_SPEC, id="spec-unreadable"),
        pytest.param({}, ["-md", "draft.gguf"], {}, R_SPEC, id="extra-draft"),
        pytest.param({}, ["--spec-type", "ngram-mod"], {}, R_SPEC, id="extra-spec-type"),
        pytest.param({}, ["--spec-ngram-size-n", "24"], {}, R_SPEC, id="extra-spec-ngram-prefix"),
        pytest.param({}, [], {"LLAMA_ARG_SPEC_TYPE": "ngram-mod"}, R_SPEC, id="env-spec-type"),
        pytest.param({}, [], {"LLAMA_ARG_SPEC_DRAFT_MODEL": "d.gguf"}, R_SPEC, id="env-draft"),
        pytest.param({"SPLIT_MODE": "tensor"}, [], {}, R_SPLIT, id="split-tensor"),
        pytest.param({"SPLIT_MODE": "Tensor"}, [], {}, R_SPLIT, id="split-tensor-case"),
        pytest.param({"SPLIT_MODE": "rows"}, [], {}, R_SPLIT, id="split-unreadable"),
        pytest.param({"HOST": "0.0.0.0"}, [], {}, R_UNSAFE, id="host-any"),
        pytest.param({"HOST": ""}, [], {}, R_UNSAFE, id="host-default-any"),
        pytest.param({}, ["--host", "0.0.0.0"], {}, R_UNSAFE, id="extra-host-beats-preset"),
        # Weights or KV in host RAM.
        pytest.param({}, ["-ot", "exps=CPU"], {}, "tensors on CPU (-ot)", id="ot-cpu"),
        pytest.param({}, ["-cmoe"], {}, "experts on CPU", id="cpu-moe"),
        pytest.param({}, ["--no-kv-offload"], {}, "KV cache on CPU", id="kv-on-cpu"),
        pytest.param({}, [], {"LLAMA_ARG_N_CPU_MOE": "8"}, "--n-cpu-moe layers on CPU", id="env-n-cpu-moe"),
        pytest.param({"NGL": "20"}, [], {}, "GPU layers limited to 20", id="ngl-limited"),
    ],
)
def test_slot_persist_refusals(changes, extra, arg_env, why):
    host = replace(OK_FACTS, arg_env=arg_env)
    assert slot_persist_plan({**OK_PRESET, **changes}, extra, host) == (False, why)


@pytest.mark.parametrize(
    ("changes", "extra", "host"),
    [
        pytest.param({}, [], OK_FACTS, id="loopback"),
        pytest.param({"HOST": "[::1]"}, [], OK_FACTS, id="ipv6-loopback"),
        pytest.param({"HOST": " localhost "}, [], OK_FACTS, id="localhost-spaced"),
        pytest.param({"HOST": "0.0.0.0"}, ["--host", "127.0.0.1"], OK_FACTS, id="extra-host-loopback"),
        pytest.param({"HOST": "0.0.0.0", "API_KEY": "k"}, [], OK_FACTS, id="preset-key"),
        pytest.param({"HOST": "0.0.0.0"}, [], replace(OK_FACTS, api_key_file="/etc/k"), id="key-file"),
        pytest.param({"SPEC": "off"}, [], OK_FACTS, id="spec-off"),
        pytest.param({"SPEC": "NO"}, [], OK_FACTS, id="spec-no"),
        pytest.param({"SPLIT_MODE": "layer"}, [], OK_FACTS, id="split-layer"),
        pytest.param({"SPLIT_MODE": "0"}, [], OK_FACTS, id="split-zero"),
        pytest.param({"EXTERNAL": "0"}, [], OK_FACTS, id="external-zero"),
        # 49 layers cover 48 blocks plus the output layer.
        pytest.param({"NGL": "49"}, [], OK_FACTS, id="ngl-covers-model"),
        pytest.param({"NGL": "auto"}, [], OK_FACTS, id="ngl-auto"),
        pytest.param({}, ["-ot", "exps=CUDA1"], OK_FACTS, id="ot-other-gpu"),
    ],
)
def test_slot_persist_accepted(changes, extra, host):
    assert slot_persist_plan({**OK_PRESET, **changes}, extra, host) == (True, "")


def test_block_count_unknown_without_gguf():
    # Without metadata the block count is 0: any explicit layer count counts as limited.
    preset = {**OK_PRESET, "NGL": "49"}
    assert slot_persist_plan(preset, [], replace(OK_FACTS, gguf=None)) == (False, "GPU layers limited to 49")


@pytest.mark.parametrize(
    ("ok", "why", "expected"),
    [
        pytest.param(True, "", None, id="accepted"),
        pytest.param(False, "", None, id="key-absent"),
        pytest.param(
            False,
            R_SPEC,
            "SLOT_PERSIST refused (speculative decoding: the engine's save does not keep the draft state): "
            "the slot state will not be kept across preset switches",
            id="refused",
        ),
    ],
)
def test_slot_persist_note(ok, why, expected):
    note = slot_persist_note(ok, why)
    if expected is None:
        assert note is None
    else:
        assert note is not None
        assert (note.id, note.text) == ("persist.refused", expected)
