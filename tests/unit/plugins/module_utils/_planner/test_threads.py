"""CPU thread flags -t / -tb (spec section 7.1)."""

from __future__ import annotations

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.facts import CpuBudget
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.notes import Note
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.threads import thread_args, thread_count

BUDGET = CpuBudget(n=4, engine=16, why="cgroup quota of 4 CPU")
CPUSET_NOTE = Note("threads.cpuset", "threads auto → -t 4: cgroup quota of 4 CPU (llama.cpp alone would start 16)")
GUARD_NOTE = Note(
    "threads.batch_guard",
    "EXTRA_ARGS sets batch CPU options (-Cb, --poll-batch…): -tb 0 set so llama.cpp keeps them "
    "(all logical threads); THREADS_BATCH to choose the number",
)
AFFINITY_FLAGS = ["-C", "--cpu-mask", "-Cr", "--cpu-range", "--cpu-strict"]
BATCH_CPU_FLAGS = [
    "-Cb",
    "--cpu-mask-batch",
    "-Crb",
    "--cpu-range-batch",
    "--cpu-strict-batch",
    "--prio-batch",
    "--poll-batch",
]


def invalid(key: str, value: str) -> Note:
    return Note("threads.invalid", f"{key}={value} ignored (not a thread count ≥ 0) → automatic", code=key)


# --- threadCount -------------------------------------------------------------

COUNT_CASES = [
    pytest.param("THREADS", "", 0, None, id="empty-silent"),
    pytest.param("THREADS", "   ", 0, None, id="blank-silent"),
    pytest.param("THREADS", "0", 0, None, id="zero-silent"),
    pytest.param("THREADS", "8", 8, None, id="number"),
    pytest.param("THREADS", " 8 ", 8, None, id="space-padded-number"),
    pytest.param("THREADS", "+6", 6, None, id="plus-sign"),
    pytest.param("THREADS", "-1", 0, invalid("THREADS", "-1"), id="negative"),
    pytest.param("THREADS", "auto", 0, invalid("THREADS", "auto"), id="text"),
    pytest.param("THREADS", "  auto ", 0, invalid("THREADS", "auto"), id="text-trimmed-in-note"),
    pytest.param("THREADS", "4.0", 0, invalid("THREADS", "4.0"), id="decimal"),
    pytest.param("THREADS", "1_0", 0, invalid("THREADS", "1_0"), id="underscore"),
    pytest.param("THREADS", "٣", 0, invalid("THREADS", "٣"), id="non-ascii-digit"),
    pytest.param("THREADS", "4 4", 0, invalid("THREADS", "4 4"), id="inner-space"),
    pytest.param("THREADS", "99999999999999999999", 0, invalid("THREADS", "99999999999999999999"), id="overflow"),
    # llama.cpp reads -t/-tb with std::stoi: beyond a C int the engine would exit at start (fuzz finding).
    pytest.param("THREADS", "2147483647", 2147483647, None, id="c-int-max"),
    pytest.param("THREADS", "2147483648", 0, invalid("THREADS", "2147483648"), id="beyond-c-int"),
    pytest.param("THREADS_BATCH", "4294967296", 0, invalid("THREADS_BATCH", "4294967296"), id="batch-beyond-c-int"),
    pytest.param("THREADS_BATCH", "x", 0, invalid("THREADS_BATCH", "x"), id="batch-key-in-note"),
    pytest.param("THREADS_BATCH", " 12", 12, None, id="batch-number"),
]


@pytest.mark.parametrize(("key", "raw", "count", "note"), COUNT_CASES)
def test_thread_count(key, raw, count, note):
    assert thread_count(key, raw) == (count, note)


# --- threadArgs ----------------------------------------------------------------


def case(*row: object, id: str):
    """One thread_args row: THREADS, THREADS_BATCH, EXTRA, budget, then the expected args and notes."""
    threads, threads_batch, extra, cpu, args, notes = row
    return pytest.param(threads, threads_batch, extra, cpu, (args, notes), id=id)


ARGS_CASES = [
    # -t, branch 4: nothing known -> nothing written (llama.cpp's own auto).
    case("", "", [], None, [], [], id="all-auto-silent"),
    case("0", "0", [], None, [], [], id="zeros-are-auto"),
    case("", "", [], CpuBudget(), [], [], id="zero-budget-silent"),
    case("", "", ["-c", "1"], CpuBudget(n=0, engine=8, why="x"), [], [], id="budget-n-zero-silent"),
    # -t, branch 1: EXTRA decides.
    case("8", "", ["-t", "4"], BUDGET, [], [], id="extra-t-beats-threads-and-budget"),
    case("8", "", ["--threads=4"], None, [], [], id="extra-threads-equals"),
    case("", "", ["--threads", "4"], BUDGET, [], [], id="extra-threads-beats-budget"),
    case("auto", "", ["-t", "4"], None, [], [invalid("THREADS", "auto")], id="extra-t-invalid-still-noted"),
    # -t, branch 2: THREADS > 0.
    case("8", "", [], None, ["-t", "8"], [], id="threads"),
    case(" 8 ", "", [], None, ["-t", "8"], [], id="threads-trimmed"),
    case("8", "", [], BUDGET, ["-t", "8"], [], id="threads-beats-budget"),
    case("8", "", ["-C", "ff"], None, ["-t", "8"], [], id="threads-with-affinity"),
    # -t, branch 3: container budget.
    case("", "", [], BUDGET, ["-t", "4"], [CPUSET_NOTE], id="budget"),
    case("0", "", [], BUDGET, ["-t", "4"], [CPUSET_NOTE], id="budget-threads-zero"),
    case("-2", "", [], BUDGET, ["-t", "4"], [invalid("THREADS", "-2"), CPUSET_NOTE], id="budget-after-invalid"),
    case(
        "",
        "",
        ["--cpu-mask=ff"],
        BUDGET,
        [],
        [],
        id="budget-disarmed-by-cpu-mask-equals",
    ),
    # -tb, branch 1: EXTRA decides.
    case("", "6", ["-tb", "2"], None, [], [], id="extra-tb-beats-threads-batch"),
    case("", "6", ["--threads-batch=2"], None, [], [], id="extra-threads-batch-equals"),
    case("", "", ["-tb", "2", "--poll-batch", "1"], None, [], [], id="extra-tb-beats-guard"),
    case("8", "", ["--threads-batch", "2"], None, ["-t", "8"], [], id="extra-tb-with-threads"),
    case("", "x", ["-tb", "2"], None, [], [invalid("THREADS_BATCH", "x")], id="extra-tb-invalid-still-noted"),
    # -tb, branch 2: THREADS_BATCH > 0.
    case("", "6", [], None, ["-tb", "6"], [], id="threads-batch"),
    case("8", "6", [], None, ["-t", "8", "-tb", "6"], [], id="t-then-tb"),
    case("", " 6 ", ["-Cb", "f0"], None, ["-tb", "6"], [], id="threads-batch-beats-guard"),
    case("", "6", [], BUDGET, ["-t", "4", "-tb", "6"], [CPUSET_NOTE], id="budget-and-threads-batch"),
    # -tb, branch 3: batch CPU options need an explicit -tb.
    case("8", "", ["--poll-batch", "0"], None, ["-t", "8", "-tb", "8"], [], id="guard-copies-threads"),
    case("", "", ["-t", "5", "-Cb", "f0"], None, ["-tb", "5"], [], id="guard-copies-extra-t"),
    case("", "", ["-t", "3", "--threads=5", "-Cb", "f0"], None, ["-tb", "5"], [], id="guard-copies-last-extra-t"),
    case("", "", ["-t", "0", "-Cb", "f0"], None, ["-tb", "0"], [], id="guard-copies-extra-t-zero-silently"),
    case("", "", ["-Cb", "f0"], BUDGET, ["-t", "4", "-tb", "4"], [CPUSET_NOTE], id="guard-copies-budget"),
    case("", "", ["-Cb", "f0"], None, ["-tb", "0"], [GUARD_NOTE], id="guard-unknown-t"),
    case("", "", ["--poll-batch=1"], None, ["-tb", "0"], [GUARD_NOTE], id="guard-equals-form"),
    case("", "", ["-Cb", "f0", "-t"], None, ["-tb", "0"], [GUARD_NOTE], id="guard-trailing-extra-t-unknown"),
    case(
        "", "", ["-C", "ff", "-Cb", "0f"], BUDGET, ["-tb", "0"], [GUARD_NOTE], id="guard-with-affinity-disarmed-budget"
    ),
    case(
        "",
        "-3",
        ["--prio-batch", "2"],
        None,
        ["-tb", "0"],
        [invalid("THREADS_BATCH", "-3"), GUARD_NOTE],
        id="guard-after-invalid-batch",
    ),
    case(
        "x",
        "y",
        ["--cpu-strict-batch", "1"],
        None,
        ["-tb", "0"],
        [invalid("THREADS", "x"), invalid("THREADS_BATCH", "y"), GUARD_NOTE],
        id="notes-order-invalid-invalid-guard",
    ),
    case(
        "x",
        "y",
        [],
        BUDGET,
        ["-t", "4"],
        [invalid("THREADS", "x"), CPUSET_NOTE, invalid("THREADS_BATCH", "y")],
        id="notes-order-invalid-cpuset-invalid",
    ),
    # -tb, branch 4: the engine copies -t.
    case("8", "0", [], None, ["-t", "8"], [], id="no-tb-engine-copies-t"),
    case("", "", ["-C", "ff"], None, [], [], id="affinity-alone-no-tb"),
]


@pytest.mark.parametrize(("threads", "threads_batch", "extra", "cpu", "expected"), ARGS_CASES)
def test_thread_args(threads, threads_batch, extra, cpu, expected):
    before = list(extra)
    assert thread_args(threads, threads_batch, extra, cpu) == expected
    assert extra == before


@pytest.mark.parametrize("flag", AFFINITY_FLAGS)
def test_affinity_disarms_budget(flag):
    assert thread_args("", "", [flag, "0-3"], BUDGET) == ([], [])


@pytest.mark.parametrize("flag", BATCH_CPU_FLAGS)
@pytest.mark.parametrize(
    ("threads", "extra_t", "cpu", "expected"),
    [
        pytest.param("8", [], None, (["-t", "8", "-tb", "8"], []), id="threads"),
        pytest.param("", ["-t", "5"], None, (["-tb", "5"], []), id="extra-t"),
        pytest.param("", [], BUDGET, (["-t", "4", "-tb", "4"], [CPUSET_NOTE]), id="budget"),
        pytest.param("", [], None, (["-tb", "0"], [GUARD_NOTE]), id="unknown"),
    ],
)
def test_each_batch_cpu_flag_triggers_guard(flag, threads, extra_t, cpu, expected):
    assert thread_args(threads, "", [*extra_t, flag, "1"], cpu) == expected


def test_cpuset_note_carries_probe_reason():
    why = "container cpuset, 6 physical cores allowed out of 32"
    args, notes = thread_args("", "", [], CpuBudget(n=6, engine=32, why=why))
    assert args == ["-t", "6"]
    assert notes == [Note("threads.cpuset", f"threads auto → -t 6: {why} (llama.cpp alone would start 32)")]
