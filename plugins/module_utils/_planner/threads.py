"""CPU thread flags ``-t`` / ``-tb`` (spec section 7.1).

For llama.cpp ``-t 0`` means every logical thread, SMT siblings included; its
real "auto" (physical cores, E-cores left out) is the absence of the flag. So
an empty or zero THREADS writes nothing, unless the container probe found a
smaller CPU budget than what llama.cpp would start on its own.
"""

from __future__ import annotations

from collections.abc import Sequence

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.argv_tokens import (
    flag_value,
    has_any_flag,
    parse_c_int,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.facts import CpuBudget
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.notes import Note

THREAD_FLAGS = ("-t", "--threads")
BATCH_THREAD_FLAGS = ("-tb", "--threads-batch")
# A hand-written affinity means the user placed the threads: the probe stays quiet.
AFFINITY_FLAGS = ("-C", "--cpu-mask", "-Cr", "--cpu-range", "--cpu-strict")
# Batch-only CPU settings that llama.cpp overwrites with the -t settings when -tb is absent.
BATCH_CPU_FLAGS = (
    "-Cb",
    "--cpu-mask-batch",
    "-Crb",
    "--cpu-range-batch",
    "--cpu-strict-batch",
    "--prio-batch",
    "--poll-batch",
)

BATCH_GUARD_TEXT = (
    "EXTRA_ARGS sets batch CPU options (-Cb, --poll-batch…): -tb 0 set so llama.cpp keeps them "
    "(all logical threads); THREADS_BATCH to choose the number"
)


def thread_count(key: str, raw: str) -> tuple[int, Note | None]:
    """THREADS / THREADS_BATCH as a count; 0 means automatic.

    Empty is automatic without a word; text, a negative number or one beyond a
    C int used to make the engine fail on its arguments, so it is dropped with
    a note.
    """
    value = raw.strip()
    if not value:
        return 0, None
    count = parse_c_int(value)
    if count is None or count < 0:
        text = f"{key}={value} ignored (not a thread count ≥ 0) → automatic"
        return 0, Note("threads.invalid", text, code=key)
    return count, None


def thread_args(
    threads: str, threads_batch: str, extra: Sequence[str], cpu: CpuBudget | None
) -> tuple[list[str], list[Note]]:
    """``-t`` then ``-tb`` flags for argv items 4-5, and their notes."""
    args: list[str] = []
    notes: list[Note] = []

    count, note = thread_count("THREADS", threads)
    if note:
        notes.append(note)
    known_t = ""  # the -t value the engine will use, when we can tell
    if has_any_flag(extra, *THREAD_FLAGS):
        known_t = flag_value(extra, *THREAD_FLAGS)
    elif count > 0:
        known_t = str(count)
        args += ["-t", known_t]
    elif cpu is not None and cpu.n > 0 and not has_any_flag(extra, *AFFINITY_FLAGS):
        known_t = str(cpu.n)
        args += ["-t", known_t]
        notes.append(
            Note(
                "threads.cpuset",
                f"threads auto → -t {cpu.n}: {cpu.why} (llama.cpp alone would start {cpu.engine})",
            )
        )

    batch_count, note = thread_count("THREADS_BATCH", threads_batch)
    if note:
        notes.append(note)
    if has_any_flag(extra, *BATCH_THREAD_FLAGS):
        pass
    elif batch_count > 0:
        args += ["-tb", str(batch_count)]
    elif has_any_flag(extra, *BATCH_CPU_FLAGS):
        # Without -tb llama.cpp copies the whole -t CPU setup over the batch one,
        # silently erasing these options; 0 was the historical value.
        if not known_t:
            known_t = "0"
            notes.append(Note("threads.batch_guard", BATCH_GUARD_TEXT))
        args += ["-tb", known_t]
    return args, notes
