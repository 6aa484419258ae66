"""NVIDIA GPU probes (spec sections 4.6, 4.7); fixtures described in fixtures/gpu/README.md."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes import gpu as probe_gpu
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.gpu import (
    Gpu,
    list_gpus,
    nvml_gpus,
    parse_smi,
    smi_gpus,
    visible_gpu_count,
    visible_vram_mib,
)
from tests.unit.support.paths import FIXTURES

SMI = FIXTURES / "gpu" / "smi"
NVML = FIXTURES / "gpu" / "nvml"
# The device run of tests/gpu/run.sh on one H200 (fixtures/gpu/README.md, "Captured on a device").
CAPTURED_H200 = "captured-h200-drv580.159.04"

# Hand-built from documented values: NVML memory totals in bytes (see fixtures/gpu/README.md).
H100_BYTES = 85520809984  # 81559 MiB
RTX4090_BYTES = 25757220864  # 24564 MiB
H200_BYTES = 150754820096  # 143771 MiB; the H200 of the device run read exactly this (test_nvml_captured_h200)


class NVMLError(Exception):
    """Stands for pynvml.NVMLError."""


@dataclass
class FakeCard:
    name: str
    uuid: str
    total: int
    free: int | None = None  # bytes; None: 512 MiB in use


class FakeNvml:
    """A pynvml look-alike: the calls probe_gpu makes, with optional failures."""

    NVMLError = NVMLError

    def __init__(self, cards: Sequence[FakeCard], fail: str = "", as_bytes: bool = False, fail_shutdown: bool = False):
        self.cards = list(cards)
        self.fail = fail
        self.as_bytes = as_bytes
        self.fail_shutdown = fail_shutdown
        self.calls: list[str] = []

    def _call(self, name: str) -> None:
        self.calls.append(name)
        if name == self.fail:
            raise NVMLError(f"{name} failed")

    def _text(self, value: str) -> str | bytes:
        return value.encode() if self.as_bytes else value

    def nvmlInit(self) -> None:
        self._call("nvmlInit")

    def nvmlShutdown(self) -> None:
        self.calls.append("nvmlShutdown")
        if self.fail_shutdown:
            raise NVMLError("shutdown failed")

    def nvmlDeviceGetCount(self) -> int:
        self._call("nvmlDeviceGetCount")
        return len(self.cards)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> int:
        self._call("nvmlDeviceGetHandleByIndex")
        return index

    def nvmlDeviceGetMemoryInfo(self, handle: int) -> SimpleNamespace:
        self._call("nvmlDeviceGetMemoryInfo")
        card = self.cards[handle]
        free = card.total - (512 << 20) if card.free is None else card.free
        return SimpleNamespace(total=card.total, free=free, used=card.total - free)

    def nvmlDeviceGetUUID(self, handle: int) -> str | bytes:
        self._call("nvmlDeviceGetUUID")
        return self._text(self.cards[handle].uuid)

    def nvmlDeviceGetName(self, handle: int) -> str | bytes:
        self._call("nvmlDeviceGetName")
        return self._text(self.cards[handle].name)


TWO_CARDS = [
    FakeCard("NVIDIA H100 80GB HBM3", "GPU-11111111-2222-3333-4444-555555555555", H100_BYTES),
    FakeCard("NVIDIA GeForce RTX 4090", "GPU-66666666-7777-8888-9999-aaaaaaaaaaaa", RTX4090_BYTES),
]
# NVML also says what is free now (the fake keeps 512 MiB in use on every card); nvidia-smi's query does not.
TWO_GPUS = [
    Gpu(0, "GPU-11111111-2222-3333-4444-555555555555", "NVIDIA H100 80GB HBM3", 81559, 81047),
    Gpu(1, "GPU-66666666-7777-8888-9999-aaaaaaaaaaaa", "NVIDIA GeForce RTX 4090", 24564, 24052),
]


# --- NVML ------------------------------------------------------------------------------------


@pytest.mark.parametrize("as_bytes", [False, True], ids=["str", "bytes"])
def test_nvml_gpus(as_bytes: bool) -> None:
    fake = FakeNvml(TWO_CARDS, as_bytes=as_bytes)
    assert nvml_gpus(fake) == TWO_GPUS
    assert fake.calls[0] == "nvmlInit"
    assert fake.calls[-1] == "nvmlShutdown"


def test_nvml_h200() -> None:
    fake = FakeNvml([FakeCard("NVIDIA H200", "GPU-0", H200_BYTES)])
    assert nvml_gpus(fake) == [Gpu(0, "GPU-0", "NVIDIA H200", 143771, 143259)]


def captured(name: str) -> dict:
    return json.loads((NVML / f"{CAPTURED_H200}.{name}.json").read_text())


def test_nvml_captured_h200() -> None:
    # The card as NVML read it on the device (nvml-before.json: bytes), through the probe: the MiB the real
    # probe returned there (probes.json), the free memory rounded down (150109880320 B = 143155.6 MiB).
    card = captured("nvml-before")["devices"][0]
    assert card["memory_total"] == H200_BYTES
    fake = FakeNvml([FakeCard(card["name"], card["uuid"], card["memory_total"], card["memory_free"])])
    gpus = nvml_gpus(fake)
    assert gpus == [Gpu(0, "GPU-d62dd4c9-959a-687b-eb99-51c5d65131d7", "NVIDIA H200", 143771, 143155)]
    assert [dataclasses.asdict(g) for g in gpus] == captured("probes")["nvml"]


def test_nvml_no_card() -> None:
    fake = FakeNvml([])
    assert nvml_gpus(fake) == []
    assert fake.calls == ["nvmlInit", "nvmlDeviceGetCount", "nvmlShutdown"]


@pytest.mark.parametrize(
    "fail",
    [
        "nvmlDeviceGetCount",
        "nvmlDeviceGetHandleByIndex",  # e.g. NVML_ERROR_NO_PERMISSION on a card outside the cgroup
        "nvmlDeviceGetMemoryInfo",
        "nvmlDeviceGetUUID",
        "nvmlDeviceGetName",
    ],
)
def test_nvml_call_failure_is_unknown_and_shuts_down(fail: str) -> None:
    fake = FakeNvml(TWO_CARDS, fail=fail)
    assert nvml_gpus(fake) is None
    assert fake.calls[-1] == "nvmlShutdown"


def test_nvml_init_failure_is_unknown_without_shutdown() -> None:
    # NVMLError_LibraryNotFound / DriverNotLoaded come from nvmlInit; there is nothing to shut down.
    fake = FakeNvml(TWO_CARDS, fail="nvmlInit")
    assert nvml_gpus(fake) is None
    assert fake.calls == ["nvmlInit"]


def test_nvml_shutdown_failure_keeps_the_answer() -> None:
    fake = FakeNvml(TWO_CARDS, fail_shutdown=True)
    assert nvml_gpus(fake) == TWO_GPUS


@pytest.mark.parametrize("total", [0, 1 << 19])  # under one MiB is no memory
def test_nvml_card_without_memory_is_unknown(total: int) -> None:
    fake = FakeNvml([TWO_CARDS[0], FakeCard("NVIDIA GB10", "GPU-x", total)])
    assert nvml_gpus(fake) is None
    assert fake.calls[-1] == "nvmlShutdown"


def test_nvml_broken_binding_is_unknown() -> None:
    # A binding missing a function (very old pynvml) must not raise.
    broken = SimpleNamespace(nvmlInit=lambda: None, nvmlShutdown=lambda: None)
    assert nvml_gpus(broken) is None


def test_nvml_absent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(probe_gpu, "pynvml", None)
    assert nvml_gpus() is None


def test_nvml_default_module_is_pynvml(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeNvml(TWO_CARDS)
    monkeypatch.setattr(probe_gpu, "pynvml", fake)
    assert nvml_gpus() == TWO_GPUS


def test_real_pynvml_without_driver_is_unknown() -> None:
    # The installed nvidia-ml-py on a machine without libnvidia-ml: NVMLError at nvmlInit.
    pynvml = pytest.importorskip("pynvml")
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        assert nvml_gpus(pynvml) is None
    else:  # pragma: no cover - only on a machine with an NVIDIA driver
        pynvml.nvmlShutdown()
        assert nvml_gpus(pynvml) is not None


# --- nvidia-smi parsing ----------------------------------------------------------------------


def read(name: str) -> str:
    return (SMI / name).read_text()


H200_4 = [
    Gpu(0, "GPU-78aaaccb-3af1-11b3-b1f8-3828c251d9f2", "NVIDIA H200-141C", 144384),
    Gpu(1, "GPU-7bdd753d-3af1-11b3-a839-80f10ebdf224", "NVIDIA H200-141C", 144384),
    Gpu(2, "GPU-7eb48ff1-3af1-11b3-9b3a-93ee06a0ff76", "NVIDIA H200-141C", 144384),
    Gpu(3, "GPU-8187d0e1-3af1-11b3-a3da-3990b94501cf", "NVIDIA H200-141C", 144384),
]
RTX_PAIR = [
    Gpu(0, "GPU-e4252fcb-8ed4-ef11-71cd-d36a23871c75", "NVIDIA GeForce RTX 4080 SUPER", 16376),
    Gpu(1, "GPU-358353dd-5933-1dc6-ac0d-e1189b063e4c", "NVIDIA GeForce RTX 3090", 24576),
]
# nvidia-smi's answer to the probe's own query on the device (no free memory: the query asks the total only).
H200_CAPTURED = [Gpu(0, "GPU-d62dd4c9-959a-687b-eb99-51c5d65131d7", "NVIDIA H200", 143771)]


def test_parse_smi_public_h200() -> None:
    assert parse_smi(read("public-h200-141c-4gpu.csv")) == H200_4


def test_parse_smi_public_rtx_pair() -> None:
    assert parse_smi(read("public-rtx4080s-rtx3090.csv")) == RTX_PAIR


def test_parse_smi_captured_h200() -> None:
    assert parse_smi(read(f"{CAPTURED_H200}.csv")) == H200_CAPTURED
    # ...which is what the probe returned on the device, and what NVML said of the same card (uuid, MiB).
    assert [dataclasses.asdict(g) for g in H200_CAPTURED] == captured("probes")["nvidia_smi"]
    assert [(g["uuid"], g["total_mib"]) for g in captured("probes")["nvml"]] == [
        (g.uuid, g.total_mib) for g in H200_CAPTURED
    ]


def test_captured_h200_smi_q_agrees() -> None:
    # nvidia-smi -q on the same card: memory.total is the FB total, reserved memory included, and the UUID.
    text = read(f"{CAPTURED_H200}.q.txt")
    fb = text[text.index("FB Memory Usage") :].splitlines()[1:5]
    assert [line.split(":")[1].strip() for line in fb] == ["143771 MiB", "616 MiB", "0 MiB", "143156 MiB"]
    assert "GPU UUID                                           : GPU-d62dd4c9-959a-687b-eb99-51c5d65131d7" in text


def test_parse_smi_handbuilt_h100() -> None:
    gpus = parse_smi(read("handbuilt-8x-h100.csv"))
    assert gpus is not None
    assert [g.index for g in gpus] == list(range(8))
    assert {g.total_mib for g in gpus} == {81559}
    assert {g.name for g in gpus} == {"NVIDIA H100 80GB HBM3"}


@pytest.mark.parametrize(
    "name",
    [
        "public-h200-141c-4gpu.with-header.txt",  # header and units: not our format
        "public-rtx4080s-rtx3090.with-header.txt",
        "handbuilt-gb10-unified.csv",  # memory.total [N/A]
        f"{CAPTURED_H200}.wide-query.txt",  # the device's wider query: header, units, 8 columns
    ],
)
def test_parse_smi_unknown_fixtures(name: str) -> None:
    assert parse_smi(read(name)) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", []),
        ("\n\n", []),
        ("0, GPU-a, NVIDIA A100-SXM4-80GB, 81920\r\n", [Gpu(0, "GPU-a", "NVIDIA A100-SXM4-80GB", 81920)]),
        (
            "\n0, GPU-a, Card, 100\n\n1, GPU-b, Card, 200\n",
            [Gpu(0, "GPU-a", "Card", 100), Gpu(1, "GPU-b", "Card", 200)],
        ),
        ("garbage line\n0, GPU-a, Card, 100\n", [Gpu(0, "GPU-a", "Card", 100)]),  # < 2 fields: skipped
        ("0, GPU-a, Card, with comma, 100\n", [Gpu(0, "GPU-a", "Card, with comma", 100)]),
        ("+1, GPU-a, Card, 100\n", [Gpu(1, "GPU-a", "Card", 100)]),
        ("0, GPU-a, Card, 0\n", None),  # MiB <= 0
        ("0, GPU-a, Card, -5\n", None),
        ("0, GPU-a, Card, [N/A]\n", None),
        ("0, GPU-a, Card, 1.5\n", None),
        ("x, GPU-a, Card, 100\n", None),  # non-integer index
        ("0, GPU-a, Card, 100\n1, GPU-b, Card, [Unknown Error]\n", None),  # one bad card spoils all
        ("0, 81920\n", None),  # the spec's own 2-field query: not ours
        ("0, GPU-a, 81920\n", None),
        ("No devices were found\n", []),
    ],
)
def test_parse_smi(text: str, expected: list[Gpu] | None) -> None:
    assert parse_smi(text) == expected


# --- nvidia-smi running ----------------------------------------------------------------------


def runner_for(status: int, output: str = "", error: Exception | None = None, seen: list | None = None):
    def run(argv: Sequence[str], timeout: float) -> tuple[int, str]:
        if seen is not None:
            seen.append((list(argv), timeout))
        if error is not None:
            raise error
        return status, output

    return run


def test_smi_gpus_captured_h200() -> None:
    assert smi_gpus(runner=runner_for(0, read(f"{CAPTURED_H200}.csv"))) == H200_CAPTURED


def test_smi_gpus_argv_and_timeout() -> None:
    seen: list = []
    assert smi_gpus(runner=runner_for(0, read("public-rtx4080s-rtx3090.csv"), seen=seen)) == RTX_PAIR
    assert seen == [(["nvidia-smi", "--query-gpu=index,uuid,name,memory.total", "--format=csv,noheader,nounits"], 3.0)]


@pytest.mark.parametrize(
    ("status", "output", "error"),
    [
        (9, read("handbuilt-no-driver.txt"), None),  # driver not loaded
        (6, read("handbuilt-no-devices.txt"), None),  # no device found
        (0, read("handbuilt-gb10-unified.csv"), None),
        (0, "", FileNotFoundError("nvidia-smi")),
        (0, "", PermissionError("nvidia-smi")),
        (0, "", subprocess.TimeoutExpired("nvidia-smi", 3.0)),
    ],
    ids=["no-driver", "no-devices", "n/a", "missing", "not-executable", "timeout"],
)
def test_smi_gpus_failures(status: int, output: str, error: Exception | None) -> None:
    assert smi_gpus(runner=runner_for(status, output, error)) is None


def test_smi_gpus_tool_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(probe_gpu.shutil, "which", lambda *args, **kwargs: None)
    assert smi_gpus() is None


def write_fake_smi(directory: Path, body: str) -> Path:
    tool = directory / "nvidia-smi"
    tool.write_text("#!/bin/sh\n" + body)
    tool.chmod(0o755)
    return tool


def test_smi_gpus_runs_the_tool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    csv = read("public-h200-141c-4gpu.csv")
    # The real subprocess path: argv, stdout only (stderr noise dropped), fixed environment.
    tool = write_fake_smi(
        tmp_path,
        '[ "$1" = "--query-gpu=index,uuid,name,memory.total" ] || exit 2\n'
        '[ "$2" = "--format=csv,noheader,nounits" ] || exit 2\n'
        '[ -z "$CUDA_VISIBLE_DEVICES" ] || exit 3\n'
        "echo 'WARNING: noise on stderr' >&2\n"
        f"cat <<'EOF'\n{csv}EOF\n",
    )
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")  # the tool must not inherit the Ansible env
    monkeypatch.setattr(probe_gpu.shutil, "which", lambda *args, **kwargs: str(tool))
    assert smi_gpus() == H200_4


def test_smi_gpus_real_failure_status(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tool = write_fake_smi(tmp_path, f"cat <<'EOF'\n{read('handbuilt-no-driver.txt')}EOF\nexit 9\n")
    monkeypatch.setattr(probe_gpu.shutil, "which", lambda *args, **kwargs: str(tool))
    assert smi_gpus() is None


def test_smi_gpus_real_timeout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tool = write_fake_smi(tmp_path, "exec sleep 5\n")
    monkeypatch.setattr(probe_gpu.shutil, "which", lambda *args, **kwargs: str(tool))
    assert smi_gpus(timeout=0.2) is None


# --- list_gpus -------------------------------------------------------------------------------


def test_list_gpus_prefers_nvml(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(probe_gpu, "pynvml", FakeNvml(TWO_CARDS))
    monkeypatch.setattr(probe_gpu, "smi_gpus", lambda: pytest.fail("nvidia-smi must not run when NVML answers"))
    assert list_gpus() == (TWO_GPUS, "nvml")


def test_list_gpus_nvml_no_card_is_an_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(probe_gpu, "pynvml", FakeNvml([]))
    assert list_gpus() == ([], "nvml")


def test_list_gpus_falls_back_to_smi(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(probe_gpu, "pynvml", FakeNvml(TWO_CARDS, fail="nvmlInit"))
    monkeypatch.setattr(probe_gpu, "smi_gpus", lambda: RTX_PAIR)
    assert list_gpus() == (RTX_PAIR, "nvidia-smi")


def test_list_gpus_unknown(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(probe_gpu, "pynvml", None)
    monkeypatch.setattr(probe_gpu, "smi_gpus", lambda: None)
    assert list_gpus() == (None, "")


# --- visible VRAM (spec 4.6) -----------------------------------------------------------------

SMALL_BIG = RTX_PAIR  # index 0: 16376 MiB, index 1: 24576 MiB


@pytest.mark.parametrize(
    ("gpus", "cvd", "pci", "expected"),
    [
        (None, "", True, 0),
        ([], "", True, 0),
        ([], "0", True, 0),
        (SMALL_BIG, "", True, 16376 + 24576),  # no selection: every card
        (SMALL_BIG, "", False, 16376 + 24576),
        (SMALL_BIG, "  ", False, 16376 + 24576),  # blank is no selection
        (SMALL_BIG, "1", True, 24576),
        (SMALL_BIG, "1", False, 16376),  # without PCI order: smallest card
        (SMALL_BIG, "0,1", True, 16376 + 24576),
        (SMALL_BIG, "1,0", False, 2 * 16376),
        (SMALL_BIG, " 1 , ", True, 24576),  # trimmed, empty items skipped
        (SMALL_BIG, ",,", True, 0),  # a selection of nothing
        (SMALL_BIG, ",,", False, 0),
        (SMALL_BIG, "1,1", True, 2 * 24576),  # duplicates count twice, as in the spec
        (SMALL_BIG, "2", True, 0),  # unknown index
        (SMALL_BIG, "0,2", False, 0),
        (SMALL_BIG, "-1", True, 0),
        (SMALL_BIG, "GPU-358353dd-5933-1dc6-ac0d-e1189b063e4c", True, 0),  # UUID: unknown
        (SMALL_BIG, "MIG-GPU-358353dd-5933-1dc6-ac0d-e1189b063e4c/1/0", True, 0),  # MIG slice
        (SMALL_BIG, "MIG-1a2b3c4d-5e6f-5a7b-8c9d-0e1f2a3b4c5d", False, 0),
        (SMALL_BIG, "0,GPU-358353dd", True, 0),
        (SMALL_BIG, "0.5", True, 0),
        (H200_4, "0,3", True, 2 * 144384),
        (H200_4, "3,2,1", False, 3 * 144384),
        (H200_CAPTURED, "", True, 143771),
        (H200_CAPTURED, "0", False, 143771),
        (H200_CAPTURED, "1", True, 0),  # the device had one card
    ],
)
def test_visible_vram_mib(gpus: list[Gpu] | None, cvd: str, pci: bool, expected: int) -> None:
    assert visible_vram_mib(gpus, cvd, pci) == expected


def test_visible_vram_nvml_indices_are_pci_order() -> None:
    # NVML numbers the cards like nvidia-smi (PCI bus order): the same selection gives the same sum.
    gpus = nvml_gpus(FakeNvml(TWO_CARDS))
    assert visible_vram_mib(gpus, "1", True) == 24564
    assert visible_vram_mib(gpus, "1", False) == 24564
    assert visible_vram_mib(gpus, "0", False) == 24564  # smallest card × 1
    assert visible_vram_mib(gpus, "0", True) == 81559


# --- visible GPU count (spec 4.7) ------------------------------------------------------------


@pytest.mark.parametrize(
    ("cvd", "gpus", "expected"),
    [
        ("", None, 0),
        ("", [], 0),
        ("", SMALL_BIG, 2),
        ("", H200_4, 4),
        ("0", H200_4, 1),
        ("0,1", None, 2),  # the variable alone decides, even with no card list
        ("0, ,2,", H200_4, 2),
        ("GPU-78aaaccb-3af1-11b3-b1f8-3828c251d9f2,GPU-7bdd753d", H200_4, 2),  # UUIDs name cards too
        (" ", H200_4, 0),  # set but empty items only
        (",", SMALL_BIG, 0),
        ("5,6,7", SMALL_BIG, 3),  # not checked against the cards, as in the spec
    ],
)
def test_visible_gpu_count(cvd: str, gpus: list[Gpu] | None, expected: int) -> None:
    assert visible_gpu_count(cvd, gpus) == expected


def test_import_without_pynvml() -> None:
    # ansible-test sanity imports module_utils without nvidia-ml-py: the import must still work.
    code = (
        "import sys; sys.modules['pynvml'] = None\n"
        "from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes import gpu as p\n"
        "assert p.pynvml is None and p.PYNVML_IMPORT_ERROR, p.PYNVML_IMPORT_ERROR\n"
        "assert p.nvml_gpus() is None\n"
        "print('ok')\n"
    )
    link_tree = next(entry for entry in sys.path if entry.endswith(".collections"))  # set by conftest.py
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={"PYTHONPATH": link_tree, "PATH": "/usr/bin:/bin"},
    )
    assert result.stdout.strip() == "ok", result.stderr
