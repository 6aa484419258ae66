"""Spec section 8.3: placement.fit_blocker, why llama.cpp will not run --fit."""

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.facts import HostFacts
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.placement import TENSOR_OVERRIDE, fit_blocker
from tests.unit.support.helptexts import NEW_ENGINE, OLD_ENGINE


def _facts(help_text: str = NEW_ENGINE, **arg_env: str) -> HostFacts:
    return HostFacts(help=help_text, arg_env=arg_env)


CASES = [
    # Nothing pins the placement: --fit runs.
    pytest.param({}, [], _facts(), "", id="defaults-new-engine"),
    # 1. --fit off, every spelling, from EXTRA_ARGS or LLAMA_ARG_FIT.
    pytest.param({}, ["--fit", "off"], _facts(), "--fit off", id="fit-off"),
    pytest.param({}, ["-fit", "0"], _facts(), "--fit off", id="fit-0-short"),
    pytest.param({}, ["--fit=disabled"], _facts(), "--fit off", id="fit-disabled-equals"),
    pytest.param({}, ["--fit", " FALSE "], _facts(), "--fit off", id="fit-false-any-case-trimmed"),
    pytest.param({}, ["--fit", "on"], _facts(), "", id="fit-on"),
    pytest.param({}, [], _facts(LLAMA_ARG_FIT="off"), "--fit off", id="env-fit-off"),
    pytest.param({}, [], _facts(LLAMA_ARG_FIT=" Disabled "), "--fit off", id="env-fit-disabled-trimmed"),
    pytest.param({}, [], _facts(LLAMA_ARG_FIT="0"), "--fit off", id="env-fit-0"),
    pytest.param({}, [], _facts(LLAMA_ARG_FIT="no"), "", id="env-fit-no-is-not-off"),
    pytest.param({}, ["--fit", "on"], _facts(LLAMA_ARG_FIT="off"), "", id="extra-fit-on-beats-env-off"),
    pytest.param({"NGL": "40"}, ["--fit", "off"], _facts(), "--fit off", id="fit-off-checked-before-ngl"),
    # 2. GPU layers: EXTRA_ARGS first.
    pytest.param({}, ["-ngl", "40"], _facts(), "GPU layers fixed at 40", id="extra-ngl-number"),
    pytest.param({}, ["--n-gpu-layers=all"], _facts(), "GPU layers fixed at all", id="extra-ngl-all"),
    pytest.param({}, ["--gpu-layers", "999"], _facts(), "GPU layers fixed at 999", id="extra-ngl-999-is-fixed"),
    pytest.param({}, ["-ngl", "-1"], _facts(), "", id="extra-ngl-minus-one"),
    pytest.param({}, ["-ngl", "AUTO"], _facts(), "", id="extra-ngl-auto-any-case"),
    pytest.param({"NGL": "40"}, ["-ngl", "auto"], _facts(), "", id="extra-ngl-beats-preset"),
    # ... else NGL as nglArgs writes it (999 -> auto on a new engine, empty -> 999 on an old one).
    pytest.param({"NGL": "999"}, [], _facts(), "", id="ngl-999-new-engine-becomes-auto"),
    pytest.param({"NGL": "999"}, [], _facts(OLD_ENGINE), "GPU layers fixed at 999", id="ngl-999-old-engine"),
    pytest.param({"NGL": ""}, [], _facts(), "", id="ngl-empty-new-engine-auto"),
    pytest.param({}, [], _facts(OLD_ENGINE), "GPU layers fixed at 999", id="ngl-empty-old-engine-999"),
    pytest.param({"NGL": " 28 "}, [], _facts(), "GPU layers fixed at 28", id="ngl-number-trimmed"),
    pytest.param({"NGL": "all"}, [], _facts(), "GPU layers fixed at all", id="ngl-all"),
    # ... and NGL=auto writes no flag: LLAMA_ARG_N_GPU_LAYERS decides.
    pytest.param({"NGL": "auto"}, [], _facts(LLAMA_ARG_N_GPU_LAYERS="30"), "GPU layers fixed at 30", id="auto-env"),
    pytest.param({"NGL": "Auto"}, [], _facts(LLAMA_ARG_N_GPU_LAYERS=" 30 "), "GPU layers fixed at 30", id="auto-trim"),
    pytest.param({"NGL": "auto"}, [], _facts(LLAMA_ARG_N_GPU_LAYERS="-1"), "", id="auto-env-minus-one"),
    pytest.param({"NGL": "auto"}, [], _facts(LLAMA_ARG_N_GPU_LAYERS="auto"), "", id="auto-env-auto"),
    pytest.param({"NGL": "auto"}, [], _facts(), "", id="auto-no-env"),
    pytest.param({"NGL": "auto"}, [], _facts(OLD_ENGINE), "", id="auto-old-engine"),
    pytest.param({}, [], _facts(LLAMA_ARG_N_GPU_LAYERS="30"), "", id="env-ignored-when-ngl-flag-written"),
    pytest.param({}, ["-ngl", "40", "-ts", "1,1"], _facts(), "GPU layers fixed at 40", id="ngl-before-ts"),
    # 3. Tensor split.
    pytest.param({}, ["-ts", "1,1"], _facts(), "--tensor-split", id="ts"),
    pytest.param({}, ["--tensor-split=0.6,0.4"], _facts(), "--tensor-split", id="tensor-split-equals"),
    pytest.param({}, [], _facts(LLAMA_ARG_TENSOR_SPLIT="3,1"), "--tensor-split", id="env-tensor-split"),
    pytest.param({}, ["-ts", "1,1", "-ot", "x=CPU"], _facts(), "--tensor-split", id="ts-before-override"),
    # 4. Tensor overrides.
    pytest.param({}, ["-ot", "exps=CPU"], _facts(), TENSOR_OVERRIDE, id="ot"),
    pytest.param({}, ["--override-tensor=blk=CUDA1"], _facts(), TENSOR_OVERRIDE, id="override-tensor-equals"),
    pytest.param({}, ["--cpu-moe"], _facts(), TENSOR_OVERRIDE, id="cpu-moe"),
    pytest.param({}, ["-cmoe"], _facts(), TENSOR_OVERRIDE, id="cmoe"),
    pytest.param({}, [], _facts(LLAMA_ARG_OVERRIDE_TENSOR="exps=CPU"), TENSOR_OVERRIDE, id="env-override"),
    pytest.param({}, [], _facts(LLAMA_ARG_CPU_MOE="1"), TENSOR_OVERRIDE, id="env-cpu-moe-truthy"),
    pytest.param({}, [], _facts(LLAMA_ARG_CPU_MOE="yes"), "", id="env-cpu-moe-yes-not-truthy"),
    pytest.param({}, ["--n-cpu-moe", "20"], _facts(), "--n-cpu-moe layers on CPU", id="n-cpu-moe"),
    pytest.param({}, ["--n-cpu-moe", "0"], _facts(), "", id="n-cpu-moe-zero"),
    pytest.param({}, ["-ncffn", "8"], _facts(), "--n-cpu-ffn layers on CPU", id="n-cpu-ffn"),
    pytest.param({}, [], _facts(LLAMA_ARG_N_CPU_MOE="30"), "--n-cpu-moe layers on CPU", id="env-n-cpu-moe"),
    pytest.param({}, ["-ot", "x=CPU", "-sm", "row"], _facts(), TENSOR_OVERRIDE, id="override-before-split-mode"),
    # 5. Split mode row/tensor, EXTRA_ARGS before LLAMA_ARG_SPLIT_MODE.
    pytest.param({}, ["-sm", "row"], _facts(), "-sm row", id="sm-row"),
    pytest.param({}, ["--split-mode=TENSOR"], _facts(), "-sm tensor", id="split-mode-tensor-any-case"),
    pytest.param({}, ["-sm", "tensor"], _facts(), "-sm tensor", id="placement-view-tensor"),
    pytest.param({}, [], _facts(LLAMA_ARG_SPLIT_MODE=" Row "), "-sm row", id="env-sm-row-trimmed"),
    pytest.param({}, [], _facts(LLAMA_ARG_SPLIT_MODE="tensor"), "-sm tensor", id="env-sm-tensor"),
    pytest.param({}, ["-sm", "layer"], _facts(LLAMA_ARG_SPLIT_MODE="row"), "", id="extra-layer-beats-env-row"),
    pytest.param({}, ["-sm", "none"], _facts(), "", id="sm-none"),
    # --device picks the cards but leaves the layout to --fit.
    pytest.param({}, ["--device", "CUDA1,CUDA0"], _facts(), "", id="device-does-not-block"),
    pytest.param({}, [], _facts(LLAMA_ARG_DEVICE="CUDA0"), "", id="env-device-does-not-block"),
]


@pytest.mark.parametrize(("preset", "extra", "facts", "why"), CASES)
def test_fit_blocker(preset, extra, facts, why):
    assert fit_blocker(preset, extra, facts) == why
