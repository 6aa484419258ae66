"""Spec section 8.6: CUDA launch queues (CUDA_SCALE_LAUNCH_QUEUES)."""

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.facts import HostFacts
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.launch_queues import (
    launch_queues_env,
    pipeline_blocker,
    served_gpu_count,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.placement import KV_ON_CPU, TENSOR_OVERRIDE


def _facts(gpus: int = 2, launch_queues: str = "", **arg_env: str) -> HostFacts:
    return HostFacts(gpus=gpus, launch_queues=launch_queues, arg_env=arg_env)


def _auto_text(n: int) -> str:
    return f"CUDA_SCALE_LAUNCH_QUEUES=4x ({n} GPU, pipeline parallelism possible) — CUDA_LAUNCH_QUEUES=off to disable"


# --- served_gpu_count -------------------------------------------------------------


@pytest.mark.parametrize(
    ("extra", "facts", "count"),
    [
        pytest.param([], _facts(0), 0, id="unknown"),
        pytest.param([], _facts(1), 1, id="one-probed"),
        pytest.param([], _facts(3), 3, id="three-probed"),
        pytest.param(["--device", "CUDA0,CUDA1"], _facts(0), 2, id="device-two-cuda"),
        pytest.param(["-dev", "CUDA0"], _facts(2), 1, id="device-one-cuda"),
        pytest.param(["--device=cuda0, cuda1"], _facts(0), 2, id="device-any-case-spaces"),
        pytest.param(["-dev", "Vulkan0,Vulkan1"], _facts(2), 0, id="vulkan-counts-zero"),
        pytest.param(["-dev", "Metal"], _facts(2), 0, id="metal-counts-zero"),
        pytest.param(["-dev", "none"], _facts(2), 0, id="none"),
        pytest.param(["-dev", "CUDA0,Vulkan0"], _facts(0), 1, id="mixed"),
        pytest.param([], _facts(0, LLAMA_ARG_DEVICE="CUDA0,CUDA1"), 2, id="env-device"),
        pytest.param([], _facts(2, LLAMA_ARG_DEVICE="CUDA1"), 1, id="env-device-one"),
        pytest.param(["-dev", "CUDA0"], _facts(0, LLAMA_ARG_DEVICE="CUDA0,CUDA1"), 1, id="extra-beats-env"),
    ],
)
def test_served_gpu_count(extra, facts, count):
    assert served_gpu_count(extra, facts) == count


# --- pipeline_blocker --------------------------------------------------------------


@pytest.mark.parametrize(
    ("preset", "extra", "arg_env", "why"),
    [
        pytest.param({}, [], {}, "", id="nothing"),
        # tensor overrides, including their disguised forms
        pytest.param({}, ["-ot", "per_layer_token_embd=CPU"], {}, TENSOR_OVERRIDE, id="ot"),
        pytest.param({}, ["--cpu-moe"], {}, TENSOR_OVERRIDE, id="cpu-moe"),
        pytest.param({}, [], {"LLAMA_ARG_OVERRIDE_TENSOR": "exps=CPU"}, TENSOR_OVERRIDE, id="env-override"),
        pytest.param({}, [], {"LLAMA_ARG_CPU_MOE": "1"}, TENSOR_OVERRIDE, id="env-cpu-moe"),
        pytest.param({}, [], {"LLAMA_ARG_CPU_MOE": "yes"}, "", id="env-cpu-moe-yes-not-truthy"),
        pytest.param({}, [], {"LLAMA_ARG_CPU_MOE": "0"}, "", id="env-cpu-moe-0"),
        pytest.param({}, ["--n-cpu-moe=12"], {}, "--n-cpu-moe layers on CPU", id="n-cpu-moe"),
        pytest.param({}, ["--n-cpu-moe", "0"], {}, "", id="n-cpu-moe-zero"),
        pytest.param({}, ["--n-cpu-moe", "20", "--n-cpu-moe", "0"], {}, "--n-cpu-moe layers on CPU", id="accumulate"),
        pytest.param(
            {}, ["--n-cpu-moe", "0"], {"LLAMA_ARG_N_CPU_MOE": "30"}, "--n-cpu-moe layers on CPU", id="env-accumulates"
        ),
        pytest.param({}, ["-ncffn", "8"], {}, "--n-cpu-ffn layers on CPU", id="n-cpu-ffn"),
        pytest.param({}, ["-ot", "x=CPU", "-nkvo"], {}, TENSOR_OVERRIDE, id="override-before-kv"),
        # KV cache on CPU
        pytest.param({}, ["-nkvo"], {}, KV_ON_CPU, id="nkvo"),
        pytest.param({}, [], {"LLAMA_ARG_NO_KV_OFFLOAD": "0"}, KV_ON_CPU, id="env-no-kv-offload-presence"),
        pytest.param({}, [], {"LLAMA_ARG_KV_OFFLOAD": "false"}, KV_ON_CPU, id="env-kv-offload-false"),
        pytest.param({}, ["-kvo"], {"LLAMA_ARG_NO_KV_OFFLOAD": "1"}, "", id="kvo-beats-env"),
        pytest.param({}, ["-nkvo", "-kvo"], {}, "", id="last-kv-flag-wins"),
        pytest.param({}, ["-nkvo", "-sm", "row"], {}, KV_ON_CPU, id="kv-before-split"),
        # split mode: anything but an exact "layer" (case-sensitive)
        pytest.param({}, ["-sm", "row"], {}, "split mode row", id="sm-row"),
        pytest.param({}, ["-sm", "tensor"], {}, "split mode tensor", id="sm-tensor-placement-view"),
        pytest.param({}, ["-sm", "none"], {}, "split mode none", id="sm-none"),
        pytest.param({}, ["-sm", "Layer"], {}, "split mode Layer", id="sm-layer-case-sensitive"),
        pytest.param({}, ["--split-mode=layer"], {}, "", id="split-mode-layer"),
        pytest.param({}, [], {"LLAMA_ARG_SPLIT_MODE": "none"}, "split mode none", id="env-sm-none"),
        pytest.param({}, [], {"LLAMA_ARG_SPLIT_MODE": "layer"}, "", id="env-sm-layer"),
        pytest.param({}, ["-sm", "layer"], {"LLAMA_ARG_SPLIT_MODE": "row"}, "", id="extra-sm-beats-env"),
        pytest.param({"NGL": "28"}, ["-sm", "row"], {}, "split mode row", id="split-before-layers"),
        # GPU layers: EXTRA_ARGS, else NGL (auto -> LLAMA_ARG_N_GPU_LAYERS), lower-cased
        pytest.param({}, ["-ngl", "40"], {}, "GPU layers limited to 40", id="extra-ngl"),
        pytest.param({"NGL": "999"}, ["--n-gpu-layers", "40"], {}, "GPU layers limited to 40", id="extra-beats-ngl"),
        pytest.param({}, ["-ngl", "ALL"], {}, "", id="extra-all-any-case"),
        pytest.param({}, ["--gpu-layers=999"], {}, "", id="extra-999"),
        pytest.param({}, ["-ngl", "Auto"], {}, "", id="extra-auto"),
        pytest.param({"NGL": "28"}, [], {}, "GPU layers limited to 28", id="ngl-number"),
        pytest.param({"NGL": " 28 "}, [], {}, "GPU layers limited to 28", id="ngl-trimmed"),
        pytest.param({"NGL": "-1"}, [], {}, "GPU layers limited to -1", id="ngl-minus-one-not-full-gpu"),
        pytest.param({"NGL": "999"}, [], {}, "", id="ngl-999"),
        pytest.param({"NGL": "all"}, [], {}, "", id="ngl-all"),
        pytest.param({"NGL": "auto"}, [], {}, "", id="ngl-auto-no-env"),
        pytest.param({"NGL": "auto"}, [], {"LLAMA_ARG_N_GPU_LAYERS": "20"}, "GPU layers limited to 20", id="auto-env"),
        pytest.param({"NGL": "AUTO"}, [], {"LLAMA_ARG_N_GPU_LAYERS": " All "}, "", id="auto-env-all"),
        pytest.param({}, [], {"LLAMA_ARG_N_GPU_LAYERS": "20"}, "", id="ngl-empty-env-ignored"),
    ],
)
def test_pipeline_blocker(preset, extra, arg_env, why):
    assert pipeline_blocker(preset, extra, arg_env) == why


# --- launch_queues_env ---------------------------------------------------------


@pytest.mark.parametrize(
    ("preset", "place", "facts"),
    [
        pytest.param({"CUDA_LAUNCH_QUEUES": "2x"}, [], _facts(2, "1x"), id="user-env-set"),
        pytest.param({"CUDA_LAUNCH_QUEUES": "8x"}, [], _facts(2, "0"), id="user-env-beats-invalid"),
        pytest.param({"CUDA_LAUNCH_QUEUES": "off"}, [], _facts(2), id="off"),
        pytest.param({"CUDA_LAUNCH_QUEUES": " OFF "}, [], _facts(2), id="off-any-case"),
        pytest.param({"NGL": "999"}, [], _facts(1), id="one-gpu"),
        pytest.param({}, [], _facts(0), id="unknown-gpus"),
        pytest.param({"CUDA_LAUNCH_QUEUES": "auto"}, [], _facts(1), id="auto-one-gpu"),
        pytest.param({}, ["--device", "CUDA0"], _facts(2), id="one-device"),
        pytest.param({}, ["-dev", "Vulkan0,Vulkan1"], _facts(2), id="vulkan-devices"),
        pytest.param({}, ["-dev", "none"], _facts(2), id="device-none"),
        pytest.param({}, [], _facts(2, LLAMA_ARG_DEVICE="CUDA1"), id="env-one-device"),
        pytest.param({"NGL": "28"}, [], _facts(2), id="blocked-ngl"),
        pytest.param({}, ["-ot", "per_layer_token_embd=CPU", "--n-cpu-moe", "40"], _facts(2), id="blocked-moe"),
        pytest.param({}, ["-nkvo"], _facts(2), id="blocked-kv"),
        pytest.param({}, ["-sm", "row"], _facts(2), id="blocked-row"),
        pytest.param({}, ["-sm", "tensor"], _facts(2), id="blocked-accepted-tensor-split"),
        pytest.param({}, [], _facts(2, LLAMA_ARG_SPLIT_MODE="none"), id="blocked-env-split-none"),
        pytest.param({"NGL": "auto"}, [], _facts(2, LLAMA_ARG_N_GPU_LAYERS="20"), id="blocked-env-layers"),
    ],
)
def test_launch_queues_silent(preset, place, facts):
    assert launch_queues_env(preset, place, facts) == ("", [])


@pytest.mark.parametrize(
    ("written", "value", "gpus"),
    [
        pytest.param("2X", "2x", 1, id="upper-one-gpu"),
        pytest.param(" 0.25x ", "0.25x", 0, id="spaces-unknown-gpus"),
        pytest.param("0.5X", "0.5x", 2, id="half"),
        pytest.param("4x", "4x", 1, id="four"),
    ],
)
def test_launch_queues_explicit(written, value, gpus):
    # An explicit value is set whatever the placement: here it would block the pipeline.
    got, notes = launch_queues_env({"CUDA_LAUNCH_QUEUES": written, "NGL": "28"}, ["-sm", "row"], _facts(gpus))
    assert got == value
    expected = f"CUDA_SCALE_LAUNCH_QUEUES={value} (CUDA_LAUNCH_QUEUES)"
    assert [(n.id, n.text) for n in notes] == [("queues.explicit", expected)]


@pytest.mark.parametrize(
    ("preset", "place", "facts", "gpus"),
    [
        pytest.param({"NGL": "999"}, [], _facts(2), 2, id="dense-two-gpus"),
        pytest.param({"NGL": "all"}, [], _facts(2), 2, id="ngl-all"),
        pytest.param({"NGL": "Auto"}, [], _facts(3), 3, id="ngl-auto-three-gpus"),
        pytest.param({"CUDA_LAUNCH_QUEUES": "auto"}, [], _facts(2), 2, id="auto-word"),
        pytest.param({"CUDA_LAUNCH_QUEUES": " AUTO "}, [], _facts(2), 2, id="auto-any-case"),
        pytest.param({"CUDA_LAUNCH_QUEUES": ""}, [], _facts(2), 2, id="empty-key"),
        pytest.param({}, ["--n-cpu-moe", "0"], _facts(2), 2, id="n-cpu-moe-zero"),
        pytest.param({}, ["--split-mode=layer"], _facts(2), 2, id="explicit-layer-split"),
        pytest.param({}, ["-nkvo", "-kvo"], _facts(2), 2, id="kv-back-on-gpu"),
        pytest.param({}, [], _facts(2, LLAMA_ARG_CPU_MOE="0"), 2, id="env-cpu-moe-0"),
        pytest.param({}, [], _facts(2, LLAMA_ARG_N_GPU_LAYERS="20"), 2, id="ngl-empty-env-ignored"),
        pytest.param(
            {}, ["--device", "CUDA1,CUDA0", "--tensor-split", "0.6,0.4"], _facts(0), 2, id="device-list-no-probe"
        ),
        pytest.param({}, [], _facts(0, LLAMA_ARG_DEVICE="CUDA0,CUDA1"), 2, id="env-device-list"),
    ],
)
def test_launch_queues_auto(preset, place, facts, gpus):
    got, notes = launch_queues_env(preset, place, facts)
    assert got == "4x"
    assert [(n.id, n.text) for n in notes] == [("queues.auto", _auto_text(gpus))]


def _invalid_text(written: str) -> str:
    return f"CUDA_LAUNCH_QUEUES={written} ignored (0.25x, 0.5x, 2x, 4x or off) → automatic"


@pytest.mark.parametrize(
    ("written", "gpus", "value", "notes"),
    [
        pytest.param(
            "8x", 2, "4x", [("queues.invalid", _invalid_text("8x")), ("queues.auto", _auto_text(2))], id="then-auto"
        ),
        pytest.param(
            " 8X ", 3, "4x", [("queues.invalid", _invalid_text(" 8X ")), ("queues.auto", _auto_text(3))], id="raw"
        ),
        pytest.param("beaucoup", 1, "", [("queues.invalid", _invalid_text("beaucoup"))], id="one-gpu"),
        pytest.param("1x", 0, "", [("queues.invalid", _invalid_text("1x"))], id="unknown-gpus"),
    ],
)
def test_launch_queues_invalid(written, gpus, value, notes):
    got, got_notes = launch_queues_env({"CUDA_LAUNCH_QUEUES": written}, [], _facts(gpus))
    assert got == value
    assert [(n.id, n.text) for n in got_notes] == notes


def test_launch_queues_invalid_then_blocked_keeps_note():
    got, notes = launch_queues_env({"CUDA_LAUNCH_QUEUES": "3x", "NGL": "28"}, [], _facts(2))
    assert got == ""
    assert [n.id for n in notes] == ["queues.invalid"]
