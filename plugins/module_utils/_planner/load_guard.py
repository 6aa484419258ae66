"""RAM load guard: resident load modes with more weights in RAM than the host has.

Spec sections 14.2-14.3. ``--load-mode none/mlock/dio/mmap+mlock`` (or the old
``--no-mmap`` / ``--mlock``) keep the weights left to the CPU entirely in RAM;
with too many of them the host swaps (decoding collapses) or the kernel kills
the engine, and under a supervisor that becomes a restart loop (llama.cpp
#26110). Only the weights that stay in RAM count: those sent to VRAM do not
stay there. When a certain lower bound of those weights exceeds 90 % of RAM the
launch is refused (LOAD_GUARD=off overrides); above 80 % of an estimate it is
only a warning. Plain mmap lets the system re-read pages and is never judged.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.access import is_external
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.argv_tokens import (
    env_truthy,
    flag_value,
    has_any_flag,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.capabilities import supports_load_mode
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.facts import HostFacts, SplitDev
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.notes import Note, gib_text

RESIDENT_MODES = ("none", "mlock", "dio", "mmap+mlock")
LOAD_GUARD_OFF_WORDS = ("off", "0", "false", "non", "no")
# Variables only engines without --load-mode read.
OLD_LOAD_ENV = ("LLAMA_ARG_MLOCK", "LLAMA_ARG_NO_MMAP")
# The launcher exits with EX_CONFIG on a refusal; the unit must not restart on it.
REFUSAL_EXIT_STATUS = 78


def resident_load_mode(tokens: Sequence[str], arg_env: Mapping[str, str]) -> str:
    """The load mode that keeps CPU weights fully resident, as written, else ``""``.

    Read from the command line first; the LLAMA_ARG_* variables only count
    when it says nothing about loading at all.
    """
    mode = flag_value(tokens, "--load-mode", "-lm").strip().lower()
    mlock, no_mmap = has_any_flag(tokens, "--mlock"), has_any_flag(tokens, "--no-mmap")
    if not mode and not mlock and not no_mmap:
        mode = arg_env.get("LLAMA_ARG_LOAD_MODE", "").strip().lower()
        if not mode:
            mlock = env_truthy(arg_env.get("LLAMA_ARG_MLOCK"))
            no_mmap = env_truthy(arg_env.get("LLAMA_ARG_NO_MMAP"))
    if mode in RESIDENT_MODES:
        return f"--load-mode {mode}"
    if mlock and no_mmap:
        return "--mlock --no-mmap"
    if mlock:
        return "--mlock"
    if no_mmap:
        return "--no-mmap"
    return ""  # mmap and auto let the system re-read pages: slow when tight, never fatal


def load_guard_off(preset: Mapping[str, str]) -> bool:
    return preset.get("LOAD_GUARD", "").strip().lower() in LOAD_GUARD_OFF_WORDS


def _load_env(arg_env: Mapping[str, str], help_text: str) -> Mapping[str, str]:
    # An engine that knows --load-mode no longer reads the old variables: left
    # in the environment they change nothing and must not refuse an mmap launch.
    if supports_load_mode(help_text):
        return {key: value for key, value in arg_env.items() if key not in OLD_LOAD_ENV}
    return arg_env


def load_mode_risk(preset: Mapping[str, str], argv: Sequence[str], facts: HostFacts) -> tuple[Note | None, Note | None]:
    """(warning, refusal) for a resident load mode on the final argv (spec 14.3)."""
    if is_external(preset):
        return None, None
    mode = resident_load_mode(argv, _load_env(facts.arg_env, facts.help))
    model_mib = facts.model_bytes >> 20
    ram = facts.ram_mib
    if not mode or model_mib <= 0 or ram <= 0:
        return None, None

    # RPC servers take part of the weights elsewhere: the local VRAM bounds
    # nothing, so at most a warning, never a refusal.
    remote = has_any_flag(argv, "--rpc") or bool(facts.arg_env.get("LLAMA_ARG_RPC", "").strip())
    low, est, up_to, unsure = 0, model_mib, True, False
    if remote:
        pass
    elif facts.unified_mem:
        low = est = model_mib
        up_to = False
    elif facts.engine_vram_mib > 0:
        # Only the cards the engine lists can take weights: a sure lower bound.
        low = est = max(model_mib - facts.engine_vram_mib, 0)
        up_to = False
    elif facts.vram_mib > 0:
        # nvidia-smi only: a Vulkan or ROCm engine may use other cards too, so
        # this is an estimate, never a bound.
        est = max(model_mib - facts.vram_mib, 0)
        up_to, unsure = False, True

    if unsure and est * 10 > ram * 9:
        return (
            Note(
                "load.warn",
                f"{mode}: about {gib_text(est)} of weights in RAM (model {gib_text(model_mib)}, NVIDIA VRAM "
                f"{gib_text(facts.vram_mib)}) for {gib_text(ram)} — likely failure; refused only if the cards "
                "listed by the engine confirm it, launched otherwise; --load-mode mmap is safer",
                code="vram_estimate",
            ),
            None,
        )
    if low * 10 > ram * 9:
        message = (
            f"{mode}: at least {gib_text(low)} of weights stay in RAM (model {gib_text(model_mib)}) for "
            f"{gib_text(ram)} of RAM, container limit included — certain failure: swap and collapsed decoding, "
            "or the process is killed (llama.cpp #26110). --load-mode mmap lets the system re-read pages as needed"
        )
        if load_guard_off(preset):
            return Note("load.warn", message + "; LOAD_GUARD=off: launched anyway", code="guard_off"), None
        return None, Note("load.refuse", message + "; LOAD_GUARD=off to launch anyway")
    if est * 10 > ram * 8:
        amount = "up to" if up_to else "about"
        return (
            Note(
                "load.warn",
                f"{mode}: {amount} {gib_text(est)} of weights in RAM for {gib_text(ram)} — beyond that, swap "
                "(decoding from 25 to 7.5 t/s in llama.cpp #26110) or the process is killed; "
                "--load-mode mmap is safer",
                code="ram_tight",
            ),
            None,
        )
    return None, None


def load_guard_needs_devices(preset: Mapping[str, str], argv: Sequence[str], facts: HostFacts) -> bool:
    """Is a refusal in view on the NVIDIA VRAM alone? Then read the engine's own cards first.

    A refusal is only pronounced on the devices the engine lists itself
    (``engine_vram_mib``); this tells the probes when that list is worth reading.
    """
    if facts.engine_vram_mib > 0 or facts.vram_mib <= 0:
        return False
    refusal = load_mode_risk(preset, argv, dataclasses.replace(facts, engine_vram_mib=facts.vram_mib))[1]
    return refusal is not None


def engine_vram_from_devices(devs: tuple[SplitDev, ...]) -> int:
    """Total VRAM of the engine's devices, 0 (unknown) when empty or one reports 0 MiB.

    Without --device llama.cpp places nothing elsewhere; a card reporting 0 MiB
    is already full, a transient reading that must not become a bound.
    """
    total = 0
    for dev in devs:
        if dev.total_mib <= 0:
            return 0
        total += dev.total_mib
    return total
