"""Spec sections 1.6 and 5.3: shared readings of placement and context."""

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner import placement as pl


@pytest.mark.parametrize(
    ("ngl", "fits", "args", "note"),
    [
        pytest.param("auto", True, [], False, id="auto-new"),
        pytest.param(" AUTO ", False, [], False, id="auto-any-case-old"),
        pytest.param("999", True, ["-ngl", "auto"], True, id="sentinel-new"),
        pytest.param(" 999 ", True, ["-ngl", "auto"], True, id="sentinel-trimmed"),
        pytest.param("999", False, ["-ngl", "999"], False, id="sentinel-old"),
        pytest.param("all", True, ["-ngl", "all"], False, id="all"),
        pytest.param("ALL", False, ["-ngl", "ALL"], False, id="all-verbatim"),
        pytest.param("28", True, ["-ngl", "28"], False, id="number"),
        pytest.param("", True, ["-ngl", "auto"], False, id="empty-new"),
        pytest.param("  ", False, ["-ngl", "999"], False, id="empty-old"),
    ],
)
def test_ngl_args(ngl, fits, args, note):
    got, got_note = pl.ngl_args(ngl, fits)
    assert got == args
    assert (got_note is not None) is note
    if note:
        assert got_note.id == "ngl.sentinel_auto"
        assert "NGL=all" in got_note.text


@pytest.mark.parametrize(
    ("ngl", "knows_all", "args", "note"),
    [
        pytest.param("all", True, ["-ngl", "all"], False, id="all-known"),
        pytest.param(" ALL ", False, ["-ngl", "999"], True, id="all-unknown-any-case"),
        pytest.param("28", False, ["-ngl", "28"], False, id="number-unaffected"),
        pytest.param("", False, ["-ngl", "999"], False, id="empty-unaffected"),
    ],
)
def test_ngl_all_needs_the_engine_to_know_it(ngl, knows_all, args, note):
    # Deliberate difference from spec 5.3: llama.cpp of August 2025 reads -ngl with stoi and exits on
    # "all" ('error while handling argument "-ngl": stoi'); 999 is every layer there.
    got, got_note = pl.ngl_args(ngl, False, knows_all)
    assert got == args
    assert (got_note is not None) is note
    if note:
        assert got_note.id == "ngl.all_unsupported"
        assert "NGL=ALL" in got_note.text


@pytest.mark.parametrize(
    ("extra", "env", "offloaded"),
    [
        pytest.param([], {}, True, id="default"),
        pytest.param(["-nkvo"], {}, False, id="nkvo"),
        pytest.param(["--no-kv-offload", "-kvo"], {}, True, id="last-wins"),
        pytest.param(["-kvo"], {"LLAMA_ARG_NO_KV_OFFLOAD": "1"}, True, id="extra-beats-env"),
        pytest.param(["--kv-offload=1", "--no-kv-offload=x"], {}, False, id="equals-form"),
        pytest.param([], {"LLAMA_ARG_NO_KV_OFFLOAD": "0"}, False, id="no-offload-present-any-value"),
        pytest.param([], {"LLAMA_ARG_NO_KV_OFFLOAD": ""}, False, id="no-offload-present-empty"),
        pytest.param([], {"LLAMA_ARG_KV_OFFLOAD": "Disabled"}, False, id="kv-offload-off-any-case"),
        pytest.param([], {"LLAMA_ARG_KV_OFFLOAD": "0"}, False, id="kv-offload-0"),
        pytest.param([], {"LLAMA_ARG_KV_OFFLOAD": "yes"}, True, id="kv-offload-other"),
    ],
)
def test_kv_offloaded(extra, env, offloaded):
    assert pl.kv_offloaded(extra, env) is offloaded


@pytest.mark.parametrize(
    ("extra", "env", "reason"),
    [
        pytest.param([], {}, "", id="none"),
        pytest.param(["-ot", "exps=CUDA1"], {}, pl.TENSOR_OVERRIDE, id="ot-anywhere"),
        pytest.param(["--override-tensor=x=CPU"], {}, pl.TENSOR_OVERRIDE, id="ot-long"),
        pytest.param(["-cmoe"], {}, pl.TENSOR_OVERRIDE, id="cmoe"),
        pytest.param([], {"LLAMA_ARG_OVERRIDE_TENSOR": "a=CPU"}, pl.TENSOR_OVERRIDE, id="env-ot"),
        pytest.param([], {"LLAMA_ARG_CPU_MOE": "1"}, pl.TENSOR_OVERRIDE, id="env-cpu-moe"),
        pytest.param([], {"LLAMA_ARG_CPU_MOE": "yes"}, "", id="env-cpu-moe-not-truthy"),
        pytest.param(["--n-cpu-moe", "20"], {}, "--n-cpu-moe layers on CPU", id="ncmoe"),
        pytest.param(["-ncmoe", "20", "--n-cpu-moe", "0"], {}, "--n-cpu-moe layers on CPU", id="zero-does-not-cancel"),
        pytest.param(["--n-cpu-moe", "0"], {"LLAMA_ARG_N_CPU_MOE": "30"}, "--n-cpu-moe layers on CPU",
                     id="env-accumulates"),
        pytest.param(["--n-cpu-moe", " 0 "], {}, "", id="zero-alone"),
        pytest.param(["-ncffn", "4"], {}, "--n-cpu-ffn layers on CPU", id="ncffn"),
        pytest.param([], {"LLAMA_ARG_N_CPU_FFN": "2"}, "--n-cpu-ffn layers on CPU", id="env-ncffn"),
    ],
)
def test_tensor_override(extra, env, reason):
    assert pl.tensor_override(extra, env) == reason


@pytest.mark.parametrize(
    ("preset", "extra", "env", "expected"),
    [
        pytest.param({}, [], {}, ("", "", ""), id="defaults"),
        pytest.param({}, [], {"LLAMA_ARG_CACHE_TYPE_K": "q8_0"}, ("q8_0", "", "set by LLAMA_ARG_CACHE_TYPE_K/V"),
                     id="env"),
        pytest.param({"KV_TYPE": "q4_0"}, [], {"LLAMA_ARG_CACHE_TYPE_V": "f16"}, ("q4_0", "q4_0", "KV_TYPE"),
                     id="preset-over-env"),
        pytest.param({"KV_TYPE_K": "q8_0"}, [], {"LLAMA_ARG_CACHE_TYPE_V": "q4_0"}, ("q8_0", "q4_0", "KV_TYPE"),
                     id="preset-one-side-keeps-env-other"),
        pytest.param({"KV_TYPE": "q8_0", "KV_TYPE_V": "f16"}, [], {}, ("q8_0", "f16", "KV_TYPE"), id="per-side"),
        pytest.param({"KV_TYPE": "q8_0"}, ["-ctv", "q4_0"], {}, ("q8_0", "q4_0", "set by EXTRA_ARGS"), id="extra-v"),
        pytest.param({}, ["--cache-type-k=bf16", "-ctk", "f32"], {}, ("f32", "", "set by EXTRA_ARGS"),
                     id="extra-last"),
    ],
)
def test_effective_kv_types(preset, extra, env, expected):
    assert pl.effective_kv_types(preset, extra, env) == expected


@pytest.mark.parametrize(
    ("preset", "extra", "env", "blocks", "reason"),
    [
        pytest.param({}, [], {}, 32, "", id="all-gpu"),
        pytest.param({}, ["-ot", "blk\\.1=CUDA1,exps=cpu"], {}, 32, "tensors on CPU (-ot)", id="ot-cpu-lowercase"),
        pytest.param({}, ["-ot", "exps= CPU_REPACK"], {}, 32, "tensors on CPU (-ot)", id="ot-cpu-trim"),
        pytest.param({}, ["-ot", "exps=CUDA1"], {}, 32, "", id="ot-other-gpu"),
        pytest.param({}, ["-ot", "noequals"], {}, 32, "", id="ot-malformed"),
        pytest.param({}, [], {"LLAMA_ARG_OVERRIDE_TENSOR": "x=CPU"}, 32, "tensors on CPU (-ot)", id="ot-env"),
        pytest.param({}, ["--cpu-moe"], {}, 32, "experts on CPU", id="cpu-moe"),
        pytest.param({}, [], {"LLAMA_ARG_CPU_MOE": "true"}, 32, "experts on CPU", id="cpu-moe-env"),
        pytest.param({}, ["-ncmoe", "4"], {}, 32, "--n-cpu-moe layers on CPU", id="ncmoe"),
        pytest.param({}, ["-nkvo"], {}, 32, pl.KV_ON_CPU, id="kv-cpu"),
        pytest.param({"NGL": "20"}, [], {}, 32, "GPU layers limited to 20", id="ngl-partial"),
        pytest.param({"NGL": "33"}, [], {}, 32, "", id="ngl-blocks-plus-output"),
        pytest.param({"NGL": "32"}, [], {}, 32, "GPU layers limited to 32", id="ngl-one-short"),
        pytest.param({"NGL": "999"}, [], {}, 0, "", id="sentinel"),
        pytest.param({"NGL": "5000"}, [], {}, 0, "GPU layers limited to 5000", id="unknown-blocks"),
        pytest.param({"NGL": "all"}, [], {}, 32, "", id="all"),
        pytest.param({"NGL": "auto"}, [], {"LLAMA_ARG_N_GPU_LAYERS": "10"}, 32, "GPU layers limited to 10",
                     id="auto-reads-env"),
        pytest.param({"NGL": ""}, [], {"LLAMA_ARG_N_GPU_LAYERS": "10"}, 32, "", id="empty-ignores-env"),
        pytest.param({"NGL": "all"}, ["-ngl", " 8 "], {}, 32, "GPU layers limited to 8", id="extra-wins"),
    ],
)
def test_cpu_weights(preset, extra, env, blocks, reason):
    assert pl.cpu_weights(preset, extra, env, blocks) == reason


@pytest.mark.parametrize(
    ("extra", "env", "reason"),
    [
        pytest.param([], {}, "", id="none"),
        pytest.param(["-ot", "blk\\..*\\.ffn_.*_exps\\.=CPU"], {}, "-ot experts=CPU", id="ot-exps"),
        pytest.param(["-ot", "per_layer_token_embd=CPU"], {}, "", id="ot-not-experts"),
        pytest.param(["-ot", "EXPS=CUDA0"], {}, "", id="ot-exps-gpu"),
        pytest.param([], {"LLAMA_ARG_OVERRIDE_TENSOR": "ffn_up_EXPS=cpu"}, "-ot experts=CPU", id="env-ot"),
        pytest.param(["-cmoe"], {}, "--cpu-moe", id="cmoe"),
        pytest.param([], {"LLAMA_ARG_CPU_MOE": "on"}, "--cpu-moe", id="env-cpu-moe"),
        pytest.param(["--n-cpu-moe", "0", "-ncmoe", "12"], {}, "--n-cpu-moe 12", id="ncmoe"),
        pytest.param([], {"LLAMA_ARG_N_CPU_MOE": " 7 "}, "--n-cpu-moe 7", id="ncmoe-env"),
        pytest.param(["-ncffn", "3"], {}, "", id="ffn-not-experts"),
    ],
)
def test_cpu_experts(extra, env, reason):
    assert pl.cpu_experts(extra, env) == reason


@pytest.mark.parametrize(
    ("preset", "extra", "forced"),
    [({}, [], False), ({"NGL": "999"}, [], False), ({"NGL": " 999 "}, [], False), ({"NGL": "auto"}, [], False),
     ({"NGL": "AUTO"}, [], False), ({"NGL": "all"}, [], True), ({"NGL": "20"}, [], True),
     ({}, ["-ngl", "999"], True), ({"NGL": "20"}, ["-ngl", "auto"], False)],
)
def test_ngl_forced(preset, extra, forced):
    assert pl.ngl_forced(preset, extra) is forced


def test_split_mode_written():
    assert pl.split_mode_written(["-sm", " ROW "], {"LLAMA_ARG_SPLIT_MODE": "tensor"}) == "row"
    assert pl.split_mode_written([], {"LLAMA_ARG_SPLIT_MODE": "Tensor"}) == "tensor"
    assert pl.split_mode_written([], {}) == ""
