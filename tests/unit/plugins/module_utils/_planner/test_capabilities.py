"""Spec section 5.1: capabilities read from the help text."""

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner import capabilities as cap
from tests.unit.support.helptexts import NEW_ENGINE, OLD_ENGINE

ALL_TESTS = [
    cap.supports_ngl_all,
    cap.supports_mmap_switch,
    cap.supports_reasoning,
    cap.supports_load_mode,
    cap.supports_ngl_auto,
    cap.fits_layers_itself,
    cap.supports_fit,
    cap.supports_fit_target,
    cap.supports_cache_ram,
    cap.supports_slot_save_path,
    cap.supports_ctx_checkpoints,
    cap.supports_checkpoint_min_step,
    cap.supports_reasoning_preserve,
    cap.supports_no_kv_unified,
    cap.supports_tensor_split_mode,
    cap.supports_mtp,
    cap.supports_draft_simple,
    cap.supports_spec_n_max,
    cap.supports_spec_sampling,
    cap.supports_probabilistic,
    cap.supports_ngram_mod,
    cap.old_context_shift_default,
    cap.supports_api_key_file,
]


@pytest.mark.parametrize("test", ALL_TESTS, ids=lambda f: f.__name__)
def test_empty_help_knows_nothing(test):
    assert test("") is False


@pytest.mark.parametrize(
    ("test", "new", "old"),
    [
        (cap.supports_reasoning, True, False),
        (cap.supports_load_mode, True, False),
        (cap.supports_ngl_auto, True, False),
        (cap.fits_layers_itself, True, False),
        (cap.supports_fit, True, False),
        (cap.supports_fit_target, True, False),
        (cap.supports_cache_ram, True, False),
        (cap.supports_slot_save_path, True, True),
        (cap.supports_ctx_checkpoints, True, False),
        (cap.supports_checkpoint_min_step, True, False),
        (cap.supports_reasoning_preserve, True, False),
        (cap.supports_no_kv_unified, True, False),
        (cap.supports_tensor_split_mode, True, False),
        (cap.supports_mtp, True, False),
        (cap.supports_draft_simple, True, False),
        (cap.supports_spec_n_max, True, False),
        (cap.supports_spec_sampling, True, False),
        (cap.supports_probabilistic, True, False),
        (cap.supports_ngram_mod, True, False),
        (cap.old_context_shift_default, False, True),
        (cap.supports_api_key_file, True, False),
    ],
    ids=lambda x: getattr(x, "__name__", str(x)),
)
def test_engine_generations(test, new, old):
    assert test(NEW_ENGINE) is new
    assert test(OLD_ENGINE) is old


@pytest.mark.parametrize(
    ("help_text", "expected"),
    [
        pytest.param("--fit-target N", False, id="fit-target-alone"),
        pytest.param("--fit [on|off]", True, id="space"),
        pytest.param("-fit,--fit=on", True, id="after-comma-before-equals"),
        pytest.param("--fit[on]", True, id="bracket"),
        pytest.param("--fit", True, id="end-of-text"),
        pytest.param("x--fit on", False, id="glued-before"),
        pytest.param("--fit,", True, id="comma-after"),
        pytest.param("--fitness", False, id="longer-word"),
    ],
)
def test_fit_flag_boundaries(help_text, expected):
    assert cap.supports_fit(help_text) is expected


@pytest.mark.parametrize(
    ("help_text", "expected"),
    [
        pytest.param("-ngl N   'auto' or a number", True, id="short-flag-only"),
        pytest.param("--n-gpu-layers N" + " " * 378 + "'auto'", True, id="inside-window"),
        pytest.param("--n-gpu-layers N" + " " * 379 + "'auto'", False, id="outside-window"),
        pytest.param("--n-gpu-layers N (default: auto)", False, id="needs-quotes"),
        pytest.param("'auto' before --n-gpu-layers N", False, id="before-flag"),
        pytest.param("-ngl N\n" + " " * 500 + "--n-gpu-layers N 'auto'", True, id="long-name-searched-first"),
    ],
)
def test_ngl_auto_window(help_text, expected):
    assert cap.supports_ngl_auto(help_text) is expected


def test_load_mode_alone_fits_itself():
    assert cap.fits_layers_itself("--load-mode MODE") is True


@pytest.mark.parametrize(
    ("help_text", "expected"),
    [
        ("--no-context-shift", True),
        ("--context-shift, --no-context-shift", False),
        ("--context-shift", False),
    ],
)
def test_old_context_shift_default(help_text, expected):
    assert cap.old_context_shift_default(help_text) is expected


def test_tensor_word_alone_is_not_tensor_split_mode():
    assert cap.supports_tensor_split_mode("--tensor-split N --override-tensor P") is False


def test_mtp_needs_both_markers():
    assert cap.supports_mtp("draft-mtp") is False
    assert cap.supports_mtp("--spec-draft-n-max") is False
    assert cap.supports_draft_simple("draft-simple") is False


@pytest.mark.parametrize(
    ("help_text", "expected"),
    [
        pytest.param("-ngl,  --n-gpu-layers N   an exact number, 'auto', or 'all' (default: auto)", True, id="new"),
        pytest.param("-ngl,  --gpu-layers, --n-gpu-layers N   number of layers to store in VRAM", False, id="old"),
        pytest.param("-ngl N  layers\n" + "x" * 500 + "'all'", False, id="beyond-window"),
    ],
)
def test_ngl_all(help_text, expected):
    assert cap.supports_ngl_all(help_text) is expected


@pytest.mark.parametrize(
    ("help_text", "expected"),
    [
        pytest.param("--mmap, --no-mmap   whether to memory-map the model", True, id="pair"),
        pytest.param("--no-mmap   do not memory-map model", False, id="no-form-only"),
        pytest.param("-lm, --load-mode MODE   auto, mmap, mmap+mlock, mlock, none, dio", False, id="load-mode"),
        pytest.param("--mmap-x  other", False, id="lookalike"),
    ],
)
def test_mmap_switch(help_text, expected):
    assert cap.supports_mmap_switch(help_text) is expected
