"""What the planner asks the probes to look at, and how it reads what they saw (host_view.py)."""

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.errors import PlanError
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.facts import GGUFInfo
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.host_view import (
    arg_env_from,
    gpu_selection_env,
    host_view,
    names_devices,
    needs_draft,
    needs_engine_build,
    stable_ram_avail,
    user_env_from,
)


@pytest.mark.parametrize(
    ("preset", "env", "visible", "pci", "engine_env"),
    [
        ({}, {}, "", False, {}),
        ({"CUDA_VISIBLE_DEVICES": "1,0"}, {"CUDA_VISIBLE_DEVICES": "2"}, "1,0", True,
         {"CUDA_VISIBLE_DEVICES": "1,0", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}),
        ({}, {"CUDA_VISIBLE_DEVICES": "2", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}, "2", True,
         {"CUDA_VISIBLE_DEVICES": "2", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}),
        ({}, {"CUDA_VISIBLE_DEVICES": "2"}, "2", False, {"CUDA_VISIBLE_DEVICES": "2"}),
        ({"CUDA_VISIBLE_DEVICES": "all"}, {}, "", False, {}),  # every GPU: the variable is not set
        ({"CUDA_VISIBLE_DEVICES": "-1"}, {}, "-1", True, {"CUDA_VISIBLE_DEVICES": "-1",
                                                          "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}),
    ],
    ids=["none", "preset wins", "service in bus order", "service", "all", "none visible"],
)
def test_which_gpus_the_engine_sees(preset, env, visible, pci, engine_env):
    view = host_view(preset, env)
    assert (view.visible, view.pci_order, dict(view.engine_env)) == (visible, pci, engine_env)


def test_a_gpu_selection_the_engine_would_misread_is_refused():
    with pytest.raises(PlanError, match="CUDA_VISIBLE_DEVICES"):
        gpu_selection_env({"CUDA_VISIBLE_DEVICES": "0, 1"})


@pytest.mark.parametrize(
    ("preset", "env", "pinned", "count"),
    [
        ({}, {}, False, True),
        ({"EXTRA_ARGS": "-dev CUDA1"}, {}, True, False),
        ({}, {"LLAMA_ARG_DEVICE": "CUDA0"}, True, False),
        ({}, {"CUDA_SCALE_LAUNCH_QUEUES": "4x"}, False, False),
        ({"CUDA_LAUNCH_QUEUES": "off"}, {}, False, False),
    ],
    ids=["free", "pinned by EXTRA_ARGS", "pinned by the service", "queues set", "queues off"],
)
def test_a_device_pinned_by_hand_leaves_vram_and_the_gpu_count_unknown(preset, env, pinned, count):
    view = host_view(preset, env)
    assert (view.device_pinned, view.count_gpus) == (pinned, count)


def test_what_else_is_read():
    assert host_view({}, {"LLAMA_ARG_THREADS": "4"}).probe_cpu is False
    assert needs_engine_build({"SPEC": "auto"}, None) is True
    assert needs_engine_build({}, GGUFInfo(arch="llama")) is False
    assert needs_draft({"MODEL_DRAFT": "d.gguf", "SPEC": "auto"}) is True
    assert needs_draft({"MODEL_DRAFT": "d.gguf"}) is False  # SPEC unset: no speculative decoding
    assert needs_draft({"MODEL_DRAFT": "d.gguf", "SPEC": "off"}) is False
    assert names_devices(["-ot", "x=CPU"], {}) is True
    assert names_devices([], {"LLAMA_ARG_OVERRIDE_TENSOR": "x=CPU"}) is True
    assert names_devices(["-c", "1"], {}) is False


@pytest.mark.parametrize(
    ("measured", "previous", "total", "used"),
    [(50000, 0, 64000, 50000), (50000, 49000, 64000, 49000), (50000, 40000, 64000, 50000),
     (5000, 4200, 8000, 4200), (0, 4000, 8000, 0)],
)
def test_stable_ram_avail(measured, previous, total, used):
    assert stable_ram_avail(measured, previous, total) == used


def test_env_readers():
    env = {"LLAMA_ARG_LOAD_MODE": " mlock ", "LLAMA_ARG_X": "", "GGML_CUDA_ALLREDUCE": "nccl", "GGML_OTHER": "1",
           "LLAMA_ARG_NO_KV_OFFLOAD": ""}
    assert arg_env_from(env) == {"LLAMA_ARG_LOAD_MODE": "mlock", "LLAMA_ARG_NO_KV_OFFLOAD": "1"}
    assert user_env_from(env) == {"GGML_CUDA_ALLREDUCE": "nccl"}
