"""Spec sections 14.2-14.3: resident load modes and the RAM load guard."""

import dataclasses

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.facts import HostFacts, SplitDev
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.load_guard import (
    engine_vram_from_devices,
    load_guard_needs_devices,
    load_mode_risk,
    resident_load_mode,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.preset_text import split_args
from tests.unit.support.helptexts import NEW_ENGINE, OLD_ENGINE

MIB = 1 << 20
ARGV = ["/opt/llama/llama-server", "-m", "/models/m.gguf", "-c", "32768", "--port", "8080"]
NONE = [*ARGV, "--load-mode", "none"]

# A 100 GiB model on a host with 64 GiB of RAM and one 24 GiB card.
HOST = HostFacts(help=NEW_ENGINE, model_bytes=102400 * MIB, ram_mib=65536)


def risk(argv=None, preset=None, **changes):
    return load_mode_risk(preset or {}, NONE if argv is None else argv, dataclasses.replace(HOST, **changes))


# --- 14.2 resident load mode ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tokens", "arg_env", "mode"),
    [
        ("", {}, ""),
        ("--load-mode none", {}, "--load-mode none"),
        ("--load-mode mlock", {}, "--load-mode mlock"),
        ("--load-mode dio", {}, "--load-mode dio"),
        ("--load-mode mmap+mlock", {}, "--load-mode mmap+mlock"),
        ("-lm none", {}, "--load-mode none"),
        ("--load-mode=dio", {}, "--load-mode dio"),
        ("--load-mode MLOCK", {}, "--load-mode mlock"),
        ("--load-mode ' None '", {}, "--load-mode none"),
        ("--load-mode mmap", {}, ""),
        ("--load-mode auto", {}, ""),
        ("--load-mode weird", {}, ""),
        ("--load-mode none --load-mode mmap", {}, ""),
        ("-lm mmap --load-mode mlock", {}, "--load-mode mlock"),
        ("--mlock", {}, "--mlock"),
        ("--no-mmap", {}, "--no-mmap"),
        ("--mlock --no-mmap", {}, "--mlock --no-mmap"),
        ("--no-mmap --mlock", {}, "--mlock --no-mmap"),
        ("--load-mode mmap --mlock", {}, "--mlock"),
        ("--load-mode none --mlock", {}, "--load-mode none"),
        ("--mmap", {}, ""),
    ],
    ids=[
        "nothing",
        "none",
        "mlock",
        "dio",
        "mmap+mlock",
        "short-lm",
        "eq-form",
        "upper-case",
        "trimmed",
        "mmap",
        "auto",
        "unknown-mode",
        "last-wins-mmap",
        "last-wins-mlock",
        "old-mlock",
        "old-no-mmap",
        "old-both",
        "old-both-reversed",
        "mmap-mode-with-old-mlock",
        "resident-mode-beats-old-flag",
        "old-mmap",
    ],
)
def test_resident_mode_from_command_line(tokens, arg_env, mode):
    assert resident_load_mode(split_args(tokens), arg_env) == mode


@pytest.mark.parametrize(
    ("tokens", "arg_env", "mode"),
    [
        ("", {"LLAMA_ARG_LOAD_MODE": "none"}, "--load-mode none"),
        ("", {"LLAMA_ARG_LOAD_MODE": " MLOCK "}, "--load-mode mlock"),
        ("", {"LLAMA_ARG_LOAD_MODE": "mmap+mlock"}, "--load-mode mmap+mlock"),
        ("", {"LLAMA_ARG_LOAD_MODE": "mmap", "LLAMA_ARG_MLOCK": "1"}, ""),
        ("", {"LLAMA_ARG_LOAD_MODE": "auto"}, ""),
        ("", {"LLAMA_ARG_LOAD_MODE": "", "LLAMA_ARG_NO_MMAP": "1"}, "--no-mmap"),
        ("", {"LLAMA_ARG_MLOCK": "1"}, "--mlock"),
        ("", {"LLAMA_ARG_MLOCK": " true "}, "--mlock"),
        ("", {"LLAMA_ARG_NO_MMAP": "on"}, "--no-mmap"),
        ("", {"LLAMA_ARG_MLOCK": "enabled", "LLAMA_ARG_NO_MMAP": "1"}, "--mlock --no-mmap"),
        ("", {"LLAMA_ARG_MLOCK": "yes", "LLAMA_ARG_NO_MMAP": "0"}, ""),
        ("--load-mode mmap", {"LLAMA_ARG_LOAD_MODE": "none"}, ""),
        ("--mlock", {"LLAMA_ARG_LOAD_MODE": "none"}, "--mlock"),
        ("--mlock", {"LLAMA_ARG_NO_MMAP": "1"}, "--mlock"),
        ("--no-mmap", {"LLAMA_ARG_MLOCK": "1"}, "--no-mmap"),
    ],
    ids=[
        "env-load-mode",
        "env-load-mode-trimmed-upper",
        "env-mmap-mlock",
        "env-mmap-hides-old-vars",
        "env-auto",
        "env-empty-load-mode",
        "env-mlock",
        "env-mlock-trimmed",
        "env-no-mmap",
        "env-both",
        "env-not-truthy",
        "flag-silences-env-mode",
        "old-flag-silences-env-mode",
        "old-flag-silences-env-no-mmap",
        "old-flag-silences-env-mlock",
    ],
)
def test_resident_mode_from_environment(tokens, arg_env, mode):
    assert resident_load_mode(split_args(tokens), arg_env) == mode


# --- 14.3 load guard -----------------------------------------------------------------------------


def test_sure_bound_refuses():
    warn, refusal = risk(engine_vram_mib=24576)
    assert warn is None
    assert refusal is not None
    assert refusal.id == "load.refuse"
    assert refusal.text == (
        "--load-mode none: at least 76.0 GiB of weights stay in RAM (model 100.0 GiB) for 64.0 GiB of RAM, "
        "container limit included — certain failure: swap and collapsed decoding, or the process is killed "
        "(llama.cpp #26110). --load-mode mmap lets the system re-read pages as needed; "
        "LOAD_GUARD=off to launch anyway"
    )


@pytest.mark.parametrize("value", ["off", "0", "false", "non", "no", " OFF ", "No", "False"])
def test_load_guard_off_turns_refusal_into_warning(value):
    warn, refusal = risk(preset={"LOAD_GUARD": value}, engine_vram_mib=24576)
    assert refusal is None
    assert warn is not None
    assert warn.id == "load.warn"
    assert warn.code == "guard_off"
    assert warn.text.startswith("--load-mode none: at least 76.0 GiB of weights stay in RAM")
    assert warn.text.endswith("lets the system re-read pages as needed; LOAD_GUARD=off: launched anyway")


@pytest.mark.parametrize("value", ["", "on", "1", "yes", "disabled", "of"])
def test_load_guard_other_values_still_refuse(value):
    warn, refusal = risk(preset={"LOAD_GUARD": value}, engine_vram_mib=24576)
    assert warn is None
    assert refusal is not None


def test_unified_memory_bounds_the_whole_model():
    warn, refusal = risk(unified_mem=True, vram_mib=24576, engine_vram_mib=24576)
    assert warn is None
    assert refusal is not None
    assert "at least 100.0 GiB of weights stay in RAM (model 100.0 GiB)" in refusal.text


def test_nvidia_only_vram_is_an_estimate_warning():
    warn, refusal = risk(vram_mib=24576)
    assert refusal is None
    assert warn is not None
    assert warn.code == "vram_estimate"
    assert warn.text == (
        "--load-mode none: about 76.0 GiB of weights in RAM (model 100.0 GiB, NVIDIA VRAM 24.0 GiB) for 64.0 GiB "
        "— likely failure; refused only if the cards listed by the engine confirm it, launched otherwise; "
        "--load-mode mmap is safer"
    )


@pytest.mark.parametrize(
    ("argv", "arg_env"),
    [
        ([*NONE, "--rpc", "10.0.0.2:50052"], {}),
        ([*NONE, "--rpc=10.0.0.2:50052"], {}),
        (NONE, {"LLAMA_ARG_RPC": "10.0.0.2:50052"}),
    ],
    ids=["rpc-flag", "rpc-eq", "rpc-env"],
)
def test_remote_weights_never_refuse(argv, arg_env):
    for changes in ({"engine_vram_mib": 24576}, {"unified_mem": True}, {"vram_mib": 24576}, {}):
        warn, refusal = risk(argv, arg_env=arg_env, **changes)
        assert refusal is None
        assert warn is not None
        assert warn.code == "ram_tight"
        assert warn.text.startswith("--load-mode none: up to 100.0 GiB of weights in RAM for 64.0 GiB")


def test_blank_rpc_variable_is_not_remote():
    refusal = risk(arg_env={"LLAMA_ARG_RPC": "  "}, engine_vram_mib=24576)[1]
    assert refusal is not None


def test_unknown_vram_warns_up_to_the_whole_model():
    warn, refusal = risk()
    assert refusal is None
    assert warn is not None
    assert warn.text == (
        "--load-mode none: up to 100.0 GiB of weights in RAM for 64.0 GiB — beyond that, swap (decoding from "
        "25 to 7.5 t/s in llama.cpp #26110) or the process is killed; --load-mode mmap is safer"
    )


# Exact integer thresholds on a 10000 MiB host: refuse when low × 10 > RAM × 9,
# warn when est × 10 > RAM × 8 (unified memory makes low = est = the model).
@pytest.mark.parametrize(
    ("model_mib", "changes", "expected"),
    [
        (9001, {"unified_mem": True}, "refuse"),
        (9000, {"unified_mem": True}, "ram_tight"),
        (8001, {"unified_mem": True}, "ram_tight"),
        (8000, {"unified_mem": True}, None),
        (17001, {"engine_vram_mib": 8000}, "refuse"),
        (17000, {"engine_vram_mib": 8000}, "ram_tight"),
        (16000, {"engine_vram_mib": 8000}, None),
        (17001, {"vram_mib": 8000}, "vram_estimate"),
        (17000, {"vram_mib": 8000}, "ram_tight"),
        (16001, {"vram_mib": 8000}, "ram_tight"),
        (16000, {"vram_mib": 8000}, None),
        (8001, {}, "ram_tight"),
        (8000, {}, None),
        (4000, {"engine_vram_mib": 8000}, None),
    ],
    ids=[
        "unified-over-90",
        "unified-at-90",
        "unified-over-80",
        "unified-at-80",
        "engine-over-90",
        "engine-at-90",
        "engine-at-80",
        "nvidia-over-90",
        "nvidia-at-90",
        "nvidia-over-80",
        "nvidia-at-80",
        "unknown-over-80",
        "unknown-at-80",
        "fits-in-vram",
    ],
)
def test_thresholds(model_mib, changes, expected):
    warn, refusal = risk(model_bytes=model_mib * MIB, ram_mib=10000, **changes)
    if expected == "refuse":
        assert warn is None
        assert refusal is not None
        return
    assert refusal is None
    if expected is None:
        assert warn is None
    else:
        assert warn is not None
        assert warn.code == expected


@pytest.mark.parametrize(
    ("changes", "amount"),
    [
        ({"unified_mem": True}, "about 8.8 GiB"),
        ({"engine_vram_mib": 8000}, "about 8.8 GiB"),
        ({"vram_mib": 8000}, "about 8.8 GiB"),
        ({}, "up to 8.8 GiB"),
    ],
    ids=["unified", "engine", "nvidia", "unknown"],
)
def test_ram_tight_wording(changes, amount):
    model = 9000 if changes.get("unified_mem") or not changes else 17000
    warn = risk(model_bytes=model * MIB, ram_mib=10000, **changes)[0]
    assert warn is not None
    assert warn.text.startswith(f"--load-mode none: {amount} of weights in RAM for 9.8 GiB")


@pytest.mark.parametrize(
    ("argv", "arg_env", "help_text", "judged"),
    [
        (ARGV, {}, NEW_ENGINE, False),
        ([*ARGV, "--load-mode", "mmap"], {}, NEW_ENGINE, False),
        ([*ARGV, "--load-mode", "auto"], {}, NEW_ENGINE, False),
        ([*ARGV, "--load-mode", "mlock"], {}, NEW_ENGINE, True),
        ([*ARGV, "--load-mode", "dio"], {}, NEW_ENGINE, True),
        ([*ARGV, "--load-mode", "mmap+mlock"], {}, NEW_ENGINE, True),
        ([*ARGV, "--mlock"], {}, OLD_ENGINE, True),
        ([*ARGV, "--no-mmap"], {}, OLD_ENGINE, True),
        (ARGV, {"LLAMA_ARG_LOAD_MODE": "none"}, NEW_ENGINE, True),
        # A new engine does not read the old variables: they must not refuse an mmap launch.
        (ARGV, {"LLAMA_ARG_MLOCK": "1"}, NEW_ENGINE, False),
        (ARGV, {"LLAMA_ARG_NO_MMAP": "1"}, NEW_ENGINE, False),
        (ARGV, {"LLAMA_ARG_MLOCK": "1", "LLAMA_ARG_LOAD_MODE": "mlock"}, NEW_ENGINE, True),
        (ARGV, {"LLAMA_ARG_MLOCK": "1"}, OLD_ENGINE, True),
        (ARGV, {"LLAMA_ARG_NO_MMAP": "true"}, OLD_ENGINE, True),
        (ARGV, {"LLAMA_ARG_MLOCK": "1"}, "", True),
    ],
    ids=[
        "default-mmap",
        "mmap",
        "auto",
        "mlock",
        "dio",
        "mmap+mlock",
        "old-mlock",
        "old-no-mmap",
        "env-load-mode",
        "env-mlock-ignored-new",
        "env-no-mmap-ignored-new",
        "env-load-mode-kept-new",
        "env-mlock-old",
        "env-no-mmap-old",
        "env-mlock-unknown-engine",
    ],
)
def test_each_resident_form_is_judged(argv, arg_env, help_text, judged):
    refusal = risk(argv, arg_env=arg_env, help=help_text, engine_vram_mib=24576)[1]
    assert (refusal is not None) is judged


def test_refusal_names_the_mode_as_written():
    refusal = risk([*ARGV, "--mlock", "--no-mmap"], help=OLD_ENGINE, engine_vram_mib=24576)[1]
    assert refusal is not None
    assert refusal.text.startswith("--mlock --no-mmap: at least 76.0 GiB")


@pytest.mark.parametrize(
    ("preset", "changes"),
    [
        ({"EXTERNAL": "1"}, {"engine_vram_mib": 24576}),
        ({}, {"model_bytes": 0}),
        ({}, {"model_bytes": MIB - 1}),
        ({}, {"ram_mib": 0}),
    ],
    ids=["external", "model-unknown", "model-under-1mib", "ram-unknown"],
)
def test_silent_cases(preset, changes):
    assert risk(preset=preset, **changes) == (None, None)


# --- needs_devices and the engine's device list --------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "preset", "changes", "needed"),
    [
        (NONE, {}, {"vram_mib": 24576}, True),
        (NONE, {}, {"vram_mib": 24576, "engine_vram_mib": 24576}, False),
        (NONE, {}, {"vram_mib": 0}, False),
        (NONE, {}, {"vram_mib": 49152}, False),
        (NONE, {"LOAD_GUARD": "off"}, {"vram_mib": 24576}, False),
        (ARGV, {}, {"vram_mib": 24576}, False),
        ([*NONE, "--rpc", "h:1"], {}, {"vram_mib": 24576}, False),
        (NONE, {"EXTERNAL": "1"}, {"vram_mib": 24576}, False),
        (NONE, {}, {"vram_mib": 24576, "ram_mib": 0}, False),
    ],
    ids=[
        "refusal-in-view",
        "engine-vram-known",
        "vram-unknown",
        "fits-enough",
        "guard-off",
        "not-resident",
        "remote",
        "external",
        "ram-unknown",
    ],
)
def test_load_guard_needs_devices(argv, preset, changes, needed):
    facts = dataclasses.replace(HOST, **changes)
    assert load_guard_needs_devices(preset, argv, facts) is needed
    # Pure: the facts handed in are not changed.
    assert facts.engine_vram_mib == changes.get("engine_vram_mib", 0)


@pytest.mark.parametrize(
    ("devs", "total"),
    [
        ((), 0),
        ((SplitDev("CUDA0", 24576),), 24576),
        ((SplitDev("CUDA0", 24576), SplitDev("CUDA1", 16384)), 40960),
        ((SplitDev("CUDA0", 24576), SplitDev("CUDA1", 0)), 0),
        ((SplitDev("Vulkan0", 0),), 0),
    ],
    ids=["empty", "one", "two", "one-full-card", "only-full-card"],
)
def test_engine_vram_from_devices(devs, total):
    assert engine_vram_from_devices(devs) == total
