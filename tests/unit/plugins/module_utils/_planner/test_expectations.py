"""What a running engine must report in /props for a plan (expectations.py), read from the final command line."""

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.expectations import (
    expectations,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.facts import GGUFInfo

GEMMA = GGUFInfo(arch="gemma3", context_length=32768)
MODEL = "/m/gemma.gguf"


@pytest.mark.parametrize(
    ("argv", "gguf", "fits", "want"),
    [
        (["/b", "-m", MODEL, "-c", "4096", "--parallel", "2"], None, True, (4096, 2, "")),
        (["/b", "-m", MODEL, "-c", "4096", "--parallel", "-1"], None, True, (4096, 0, "")),
        (["/b", "-m", MODEL, "-c", "0"], GEMMA, False, (32768, 0, "")),
        (["/b", "-m", MODEL, "-c", "0"], GEMMA, True, (0, 0, "")),  # --fit may shrink it
        (["/b", "-m", MODEL, "-c", "0"], None, False, (0, 0, "")),  # the model's context is unknown
        (["/b", "-m", MODEL, "-c", "4096", "-c", "1024", "-np", "3"], None, True, (1024, 3, "")),  # the last wins
        (["/b", "-m", MODEL, "--ctx-size", "2048", "--kv-unified"], None, True, (2048, 0, "on")),
        (["/b", "-m", MODEL, "-c", "2048", "-kvu", "--no-kv-unified"], None, True, (2048, 0, "off")),
        (["/b", "-m", MODEL, "-c", "2048", "--kv-unified-per-slot", "512"], None, True, (0, 0, "")),
        (["/b", "-m", MODEL], None, True, (0, 0, "")),
        ([], None, True, (0, 0, "")),  # an external preset: nothing runs
    ],
)
def test_expectations(argv, gguf, fits, want):
    got = expectations(argv, gguf, engine_fits_itself=fits)
    assert (got.ctx, got.slots, got.kv_unified) == want
    assert got.model_path == (MODEL if argv else "")
