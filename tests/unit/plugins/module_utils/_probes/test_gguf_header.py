"""GGUF header reader and shard families: spec sections 4.3, 4.4 and 16.2.

Well-formed files are written with ``gguf.GGUFWriter`` into tmp_path and every
field is compared with what ``gguf.GGUFReader`` (an independent implementation)
says about the same file. Broken and hostile files are encoded by hand
(``Raw`` in gguf_corpus.py, shared with bench/gguf_hostile.py), from the format
as the gguf package writes it (gguf 0.19.0, gguf_writer.py) and as documented
in spec 4.3: nothing here is captured.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import tracemalloc
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.facts import GGUFInfo
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes import gguf_header
from ansible_collections.llamafleet.llamacpp.plugins.module_utils.gguf_meta import (
    GGUFError,
    clear_cache,
    is_follower_shard,
    read_gguf_info,
    shard_family,
    shard_family_missing,
    shard_family_size,
    shard_info,
)

gguf = pytest.importorskip("gguf", reason="the gguf package (requirements-dev.txt) is needed to write test files")
np = pytest.importorskip("numpy")

from gguf import GGUFEndian, GGUFReader  # noqa: E402

from tests.unit.support.gguf_corpus import (  # noqa: E402
    DENSE_KV,
    DENSE_TENSORS,
    HYBRID_KV,
    MTP_KV,
    MTP_TENSORS,
    Raw,
    T,
    base_kvs,
    base_tensors,
    hostile_files,
    put,
    section_cuts,
    write_model,
    write_split,
    write_truncation_model,
)

INT_MAX = 2**31 - 1


@pytest.fixture(autouse=True)
def _fresh_cache() -> Iterator[None]:
    clear_cache()
    yield
    clear_cache()


class Hang(BaseException):
    """Raised by the alarm; a BaseException so the reader's catch-all cannot turn it into a GGUFError."""


@pytest.fixture
def deadline() -> Iterator[Callable[[], None]]:
    """Fail instead of hanging (20 s per read: generous for a loaded CI machine, still far from a hang).

    Yields a function that starts the 20 s again, for tests that read many files in a row.
    """

    def on_alarm(signum, frame):
        raise Hang("read_gguf_info did not finish in 20 s")

    def rearm() -> None:
        signal.setitimer(signal.ITIMER_REAL, 20.0)

    previous = signal.signal(signal.SIGALRM, on_alarm)
    rearm()
    try:
        yield rearm
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# ---------------------------------------------------------------- well-formed files (GGUFWriter)


def reader_opinion(paths: Sequence[Path]) -> GGUFInfo:
    """What GGUFReader says, resolved by the rules of spec 4.3 (key names spelt out, not taken from gguf)."""
    readers = [GGUFReader(p) for p in paths]
    first = readers[0]
    fields = first.fields

    def value(key: str):
        f = fields.get(key)
        return None if f is None else f.contents()

    def clamp(v: int) -> int:
        return min(max(int(v), 0), INT_MAX)

    arch = value("general.architecture") if fields.get("general.architecture") else ""
    arch = arch if isinstance(arch, str) else ""

    def num(suffix: str) -> int:
        if not arch:
            return 0
        v = value(f"{arch}.{suffix}")
        return clamp(v) if isinstance(v, int) else 0  # floats and strings are not read (bool is an int)

    layers: tuple[int, ...] = ()
    head_count_kv = num("attention.head_count_kv")
    hckv = fields.get(f"{arch}.attention.head_count_kv") if arch else None
    integer_types = {T.UINT8, T.INT8, T.UINT16, T.INT16, T.UINT32, T.INT32, T.UINT64, T.INT64}
    if hckv is not None and hckv.types[0] == T.ARRAY:
        head_count_kv = 0
        if len(hckv.types) == 2 and hckv.types[1] in integer_types and len(hckv.data) <= 65536:
            layers = tuple(clamp(v) for v in hckv.contents())
            head_count_kv = max(layers, default=0)
    block_count = num("block_count")
    names = {t.name for r in readers for t in r.tensors}
    # Tensor bytes as the distance between the tensors' absolute offsets (padding included), the last to the file's
    # end; by block, input embeddings and the rest. The vocabulary: token_embd's second dimension.
    layer_bytes: dict[int, int] = {}
    embed_bytes = other_bytes = vocab = 0
    for reader in readers:
        spans = sorted((t.data_offset, t.name) for t in reader.tensors)
        ends = [offset for offset, _name in spans[1:]] + [os.path.getsize(reader.data.filename)] * bool(spans)
        for (offset, name), end in zip(spans, ends, strict=True):
            parts = name.split(".")
            if parts[0] == "blk" and parts[1].isdigit():
                layer_bytes[int(parts[1])] = layer_bytes.get(int(parts[1]), 0) + end - offset
            elif name.startswith("token_embd."):
                embed_bytes += end - offset
            else:
                other_bytes += end - offset
        vocab = max([vocab] + [int(t.shape[1]) for t in reader.tensors
                               if t.name == "token_embd.weight" and len(t.shape) >= 2])
    return GGUFInfo(
        version=int(first.fields["GGUF.version"].contents()),
        arch=arch,
        block_count=block_count,
        nextn=num("nextn_predict_layers"),
        context_length=num("context_length"),
        expert_count=num("expert_count"),
        key_len=num("attention.key_length"),
        val_len=num("attention.value_length"),
        full_attn_interval=num("full_attention_interval"),
        embedding_length=num("embedding_length"),
        head_count=num("attention.head_count"),
        head_count_kv=head_count_kv,
        head_count_kv_layers=layers,
        ssm_conv=num("ssm.conv_kernel"),
        ssm_inner=num("ssm.inner_size"),
        ssm_state=num("ssm.state_size"),
        ssm_groups=num("ssm.group_count"),
        hybrid=bool(arch) and any(k.startswith(f"{arch}.ssm.") for k in fields),
        has_nextn_tensor=block_count > 0 and f"blk.{block_count - 1}.nextn.eh_proj.weight" in names,
        tensor_count=sum(len(r.tensors) for r in readers),
        vocab_size=clamp(vocab) or num("vocab_size"),
        sliding_window=num("attention.sliding_window"),
        feed_forward_length=num("feed_forward_length"),
        layer_bytes=tuple(layer_bytes.get(block, 0) for block in range(max(layer_bytes, default=-1) + 1)),
        embed_bytes=embed_bytes,
        other_bytes=other_bytes,
        has_chat_template="tokenizer.chat_template" in fields,
    )


WELL_FORMED = {
    "dense": {"arch": "llama", "kv": DENSE_KV, "tensors": DENSE_TENSORS},
    "dense-big-endian": {"arch": "llama", "kv": DENSE_KV, "tensors": DENSE_TENSORS, "endianess": GGUFEndian.BIG},
    "dense-align-64": {"arch": "llama", "kv": DENSE_KV, "tensors": DENSE_TENSORS, "alignment": 64},
    "dense-align-1MiB": {"arch": "llama", "kv": DENSE_KV[:3], "tensors": DENSE_TENSORS[:2], "alignment": 1 << 20},
    "hybrid": {"arch": "qwen3next", "kv": HYBRID_KV},
    "hybrid-big-endian": {"arch": "qwen3next", "kv": HYBRID_KV, "endianess": GGUFEndian.BIG},
    "mtp": {"arch": "glm4moe", "kv": MTP_KV, "tensors": MTP_TENSORS},
    "mtp-tensor-not-in-last-block": {
        "arch": "glm4moe",
        "kv": MTP_KV,
        "tensors": [("blk.2.nextn.eh_proj.weight", (4, 4)), ("blk.3.nextn.enorm", (4,))],
    },
    "mtp-key-without-tensor": {"arch": "glm4moe", "kv": MTP_KV, "tensors": [("token_embd.weight", (4, 4))]},
    "no-tensors": {"arch": "llama", "kv": DENSE_KV, "tensors": []},
    "chat-template": {"arch": "llama", "kv": [*DENSE_KV, ("tokenizer.chat_template", "{{ messages }}", T.STRING)],
                      "tensors": DENSE_TENSORS},
    # A named template alone (tool_use) is no default: the engine falls back to ChatML.
    "named-chat-template-only": {"arch": "llama", "kv": [("tokenizer.chat_template.tool_use", "{{ x }}", T.STRING)]},
    "ssm-key-of-another-arch": {"arch": "llama", "kv": [("mamba.ssm.conv_kernel", 4, T.UINT32)]},
    "empty-arch": {"arch": "", "kv": [(".ssm.conv_kernel", 4, T.UINT32), (".block_count", 3, T.UINT32)]},
    "head-count-kv-i16-array": {
        "arch": "llama",
        "kv": [("llama.attention.head_count_kv", [4, 8, 2], T.ARRAY, T.INT16)],
    },
    "head-count-kv-u64-array-clamped": {
        "arch": "llama",
        "kv": [("llama.attention.head_count_kv", [2**64 - 1, 5], T.ARRAY, T.UINT64)],
    },
    "head-count-kv-negative-clamped": {
        "arch": "llama",
        "kv": [("llama.attention.head_count_kv", [-3, 5, -(2**63)], T.ARRAY, T.INT64)],
    },
    "head-count-kv-float-array-skipped": {
        "arch": "llama",
        "kv": [("llama.attention.head_count_kv", [1.0, 2.0], T.ARRAY, T.FLOAT32)],
    },
    "head-count-kv-65536-read": {
        "arch": "llama",
        "kv": [("llama.attention.head_count_kv", [1] * 65535 + [7], T.ARRAY, T.UINT8)],
    },
    "head-count-kv-65537-skipped": {
        "arch": "llama",
        "kv": [("llama.attention.head_count_kv", [1] * 65537, T.ARRAY, T.UINT8)],
    },
    "head-count-kv-bool-array-skipped": {
        "arch": "llama",
        "kv": [("llama.attention.head_count_kv", [True, False], T.ARRAY, T.BOOL)],
    },
    "head-count-kv-nested-array-skipped": {
        "arch": "llama",
        "kv": [("llama.attention.head_count_kv", [[4, 4], [2]], T.ARRAY, T.ARRAY)],
    },
    "nested-arrays-depth-4": {"arch": "llama", "kv": [("x.nested", [[[[1, 2]]], [[[3]]]], T.ARRAY)]},
    "string-block-count-ignored": {"arch": "llama", "kv": [("llama.block_count", "12", T.STRING)]},
    "float-context-ignored": {"arch": "llama", "kv": [("llama.context_length", 4096.0, T.FLOAT64)]},
}

# Scalar types and the clamp to [0, 2^31-1].
SCALARS = [
    (T.UINT8, 255, 255),
    (T.INT8, -5, 0),
    (T.UINT16, 65535, 65535),
    (T.INT16, -1, 0),
    (T.UINT32, 2**32 - 1, INT_MAX),
    (T.INT32, -(2**31), 0),
    (T.INT32, INT_MAX, INT_MAX),
    (T.UINT64, 2**64 - 1, INT_MAX),
    (T.UINT64, 2**63, INT_MAX),
    (T.INT64, -(2**63), 0),
    (T.INT64, 2**40, INT_MAX),
    (T.BOOL, True, 1),
    (T.UINT32, 0, 0),
]


@pytest.mark.parametrize("case", list(WELL_FORMED), ids=list(WELL_FORMED))
def test_well_formed_files_match_gguf_reader(tmp_path, case):
    spec = dict(WELL_FORMED[case])
    files = write_model(tmp_path / "model.gguf", spec.pop("arch"), **spec)
    assert read_gguf_info(str(files[0])) == reader_opinion(files)


@pytest.mark.parametrize(("vtype", "value", "expected"), SCALARS, ids=[f"{t.name}={v}" for t, v, _expected in SCALARS])
def test_integer_scalars_are_clamped(tmp_path, vtype, value, expected):
    [path] = write_model(tmp_path / "m.gguf", "llama", kv=[("llama.block_count", value, vtype)])
    info = read_gguf_info(str(path))
    assert info.block_count == expected
    assert info == reader_opinion([path])


def test_dense_fields(tmp_path):
    [path] = write_model(tmp_path / "m.gguf", "llama", kv=DENSE_KV, tensors=DENSE_TENSORS)
    assert read_gguf_info(str(path)) == GGUFInfo(
        version=3, arch="llama", block_count=4, context_length=4096, embedding_length=256, head_count=8,
        head_count_kv=2, key_len=32, val_len=32, tensor_count=5,
        # token_embd is 8 x 16 float32 (8 tokens of 16), each block one 4 x 4 float32 tensor, aligned to 32 bytes.
        vocab_size=8, feed_forward_length=688, layer_bytes=(64, 64, 64, 64), embed_bytes=512, has_chat_template=False,
    )  # fmt: skip


def test_hybrid_fields(tmp_path):
    [path] = write_model(tmp_path / "m.gguf", "qwen3next", kv=HYBRID_KV)
    info = read_gguf_info(str(path))
    assert info.hybrid
    assert info.head_count_kv_layers == (0, 0, 0, 2, 0, 0, 0, 2)
    assert info.head_count_kv == 2
    assert (info.ssm_conv, info.ssm_inner, info.ssm_state, info.ssm_groups) == (4, 4096, 128, 16)
    assert (info.full_attn_interval, info.expert_count, info.context_length) == (4, 64, 262144)


@pytest.mark.parametrize(
    ("tensors", "expected"),
    [
        (MTP_TENSORS, True),
        ([("blk.2.nextn.eh_proj.weight", (4,))], False),  # not the last block
        ([("blk.3.nextn.eh_proj.weight.extra", (4,))], False),  # not exactly the name
        ([("xblk.3.nextn.eh_proj.weight", (4,))], False),
        ([("token_embd.weight", (4,))], False),  # the key alone proves nothing
    ],
)
def test_nextn_tensor_must_be_in_the_last_block(tmp_path, tensors, expected):
    [path] = write_model(tmp_path / "m.gguf", "glm4moe", kv=MTP_KV, tensors=tensors)
    info = read_gguf_info(str(path))
    assert info.nextn == 1
    assert info.has_nextn_tensor is expected


# ---------------------------------------------------------------- split models


@pytest.mark.parametrize("small_first_shard", [False, True], ids=["tensors-in-every-shard", "no-tensor-first-shard"])
def test_split_model_any_shard_gives_the_same_info(tmp_path, small_first_shard):
    files = write_split(tmp_path, small_first_shard=small_first_shard)
    assert [f.name for f in files] == shard_family(files[-1].name)
    expected = reader_opinion(files)
    assert expected.tensor_count == 3
    assert expected.has_nextn_tensor  # found in a follower shard
    for shard in files:
        clear_cache()
        assert read_gguf_info(str(shard)) == expected
    if small_first_shard:
        assert len(GGUFReader(files[0]).tensors) == 0


def test_split_model_with_a_missing_shard_names_it(tmp_path):
    files = write_split(tmp_path, small_first_shard=False)
    assert len(files) == 3
    files[1].unlink()
    for shard in (files[0], files[2]):
        with pytest.raises(GGUFError, match=r"missing glm-00002-of-00003\.gguf in .* has 3 files"):
            read_gguf_info(str(shard))


def test_split_model_with_a_directory_in_place_of_a_shard(tmp_path):
    files = write_split(tmp_path, small_first_shard=False)
    files[2].unlink()
    files[2].mkdir()
    with pytest.raises(GGUFError, match=r"glm-00003-of-00003\.gguf"):
        read_gguf_info(str(files[0]))


def test_split_model_with_a_broken_follower_shard(tmp_path):
    files = write_split(tmp_path, small_first_shard=False)
    files[2].write_bytes(files[2].read_bytes()[:40])
    with pytest.raises(GGUFError, match="00003-of-00003"):
        read_gguf_info(str(files[0]))


# ---------------------------------------------------------------- hand-encoded files


# base_tensors: token_embd (dimensions 4 x 2: 2 tokens) at 0, blk.1's tensor at 32, 64 bytes of data.
TENSOR_BYTES_RAW = {"vocab_size": 2, "layer_bytes": (0, 32), "embed_bytes": 32}
EXPECTED_RAW = GGUFInfo(
    arch="llama", block_count=2, context_length=2048, head_count_kv=4, head_count_kv_layers=(4, 2),
    has_nextn_tensor=True, tensor_count=2, has_chat_template=False, **TENSOR_BYTES_RAW,
)  # fmt: skip


@pytest.mark.parametrize(("version", "order"), [(1, "<"), (2, "<"), (3, "<"), (1, ">"), (2, ">"), (3, ">")])
def test_hand_encoded_versions_and_byte_orders(tmp_path, version, order):
    raw = Raw(version, order)
    data = raw.file(base_kvs(raw), base_tensors(raw))[0]
    assert read_gguf_info(put(tmp_path, data)) == GGUFInfo(version=version, **{
        k: v for k, v in EXPECTED_RAW.__dict__.items() if k != "version"
    })  # fmt: skip


def test_hand_encoded_v2_v3_agree_with_gguf_reader(tmp_path):
    for version in (2, 3):
        raw = Raw(version)
        data = raw.file(base_kvs(raw), base_tensors(raw))[0]
        path = put(tmp_path, data, f"v{version}.gguf")
        assert read_gguf_info(path) == reader_opinion([Path(path)])


def test_missing_architecture_resolves_nothing(tmp_path):
    raw = Raw()
    data = raw.file([raw.u32("llama.block_count", 2), raw.u32(".block_count", 2)], base_tensors(raw))[0]
    # The keys need the architecture; the tensor table does not.
    assert read_gguf_info(put(tmp_path, data)) == GGUFInfo(version=3, tensor_count=2, has_chat_template=False,
                                                           **TENSOR_BYTES_RAW)


@pytest.mark.parametrize("version", [1, 3])
def test_truncation_at_every_section_boundary(tmp_path, deadline, version):
    data, cuts, valid = section_cuts(version)
    for cut in cuts:
        with pytest.raises(GGUFError):
            read_gguf_info(put(tmp_path, data[:cut], f"cut{cut}.gguf"))
    # One byte of the last tensor's data is enough for the offset check (spec 4.3).
    assert read_gguf_info(put(tmp_path, data[:valid], "ok.gguf")).tensor_count == 2


def test_truncation_at_every_byte_of_a_written_file(tmp_path, deadline):
    data, end = write_truncation_model(tmp_path / "m.gguf")  # end: absolute offset of the last tensor's data
    cut_path = tmp_path / "cut.gguf"
    for cut in range(end + 1):
        deadline()
        cut_path.write_bytes(data[:cut])
        clear_cache()
        with pytest.raises(GGUFError):
            read_gguf_info(str(cut_path))


HOSTILE = hostile_files()


@pytest.mark.parametrize("name", list(HOSTILE), ids=list(HOSTILE))
def test_hostile_files_raise_gguf_error(tmp_path, deadline, name):
    data, message = HOSTILE[name]
    with pytest.raises(GGUFError, match=message):
        read_gguf_info(put(tmp_path, data))


def test_hand_encoded_valid_edges_are_accepted(tmp_path):
    r = Raw()
    arch = r.text("general.architecture", "llama")
    nested4 = r.array(T.ARRAY, 1, r.array(T.ARRAY, 1, r.array(T.ARRAY, 1, r.array(T.UINT8, 1, b"\1"))))
    cases = {
        "alignment-1": r.file([arch, r.u32("general.alignment", 1)], [r.tensor("t")])[0],
        "alignment-2^20-u64": r.file(
            [arch, r.kv("general.alignment", T.UINT64, r.pack("Q", 1 << 20))], [r.tensor("t")], alignment=1 << 20
        )[0],
        "nested-depth-4": r.file([arch, r.kv("x", T.ARRAY, nested4)], [r.tensor("t")])[0],
        "empty-arrays": r.file(
            [arch, r.kv("x", T.ARRAY, r.array(T.STRING, 0)), r.kv("y", T.ARRAY, r.array(T.ARRAY, 0))]
        )[0],
        "tensor-name-4096-n-dims-8": r.file([arch], [r.tensor("t" * 4096, (1,) * 8)])[0],
        "no-kv-no-tensor": r.header(0, 0),
        "non-utf8-key-and-arch": r.file(
            [r.kv("general.architecture", T.STRING, r.string(b"ll\xffama")), r.kv(b"\xfe", T.UINT8, b"\1")]
        )[0],
    }
    for name, data in cases.items():
        info = read_gguf_info(put(tmp_path, data, f"{name}.gguf"))
        assert isinstance(info, GGUFInfo), name


def test_a_huge_announced_string_is_never_allocated(tmp_path):
    """The arch string is read, but a length beyond the file is refused before any allocation."""
    r = Raw()
    data = r.header(0, 1) + r.kv("general.architecture", T.STRING, r.count(60 << 20) + b"llama")
    path = put(tmp_path, data)
    tracemalloc.start()
    try:
        with pytest.raises(GGUFError, match="truncated"):
            read_gguf_info(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 << 20


def test_unexpected_exceptions_become_gguf_errors(tmp_path, monkeypatch):
    [path] = write_model(tmp_path / "m.gguf", "llama", kv=DENSE_KV)

    def explode(self, *args, **kwargs):
        raise ZeroDivisionError("boom")

    monkeypatch.setattr(gguf_header._Walker, "_array", explode)
    with pytest.raises(GGUFError, match="ZeroDivisionError"):
        read_gguf_info(str(path))


def test_not_a_regular_file(tmp_path, deadline):
    fifo = tmp_path / "pipe.gguf"
    os.mkfifo(fifo)
    with pytest.raises(GGUFError, match="not a regular file"):
        read_gguf_info(str(fifo))
    (tmp_path / "dir.gguf").mkdir()
    with pytest.raises(GGUFError):
        read_gguf_info(str(tmp_path / "dir.gguf"))
    with pytest.raises(GGUFError, match="cannot"):
        read_gguf_info(str(tmp_path / "absent.gguf"))


def test_a_file_shrinking_while_read(tmp_path, monkeypatch):
    [path] = write_model(tmp_path / "m.gguf", "llama", kv=DENSE_KV)
    real_pread = os.pread
    monkeypatch.setattr(os, "pread", lambda fd, n, offset: real_pread(fd, min(n, 16), offset) if offset < 16 else b"")
    with pytest.raises(GGUFError, match="file shrank while being read"):
        read_gguf_info(str(path))


def test_open_failure(tmp_path, monkeypatch):
    [path] = write_model(tmp_path / "m.gguf", "llama")

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(os, "open", refuse)
    with pytest.raises(GGUFError, match=r"cannot open .*Permission denied"):
        read_gguf_info(str(path))


def test_without_the_gguf_package_in_a_fresh_interpreter(tmp_path):
    """What ansible-test sanity does: import the module with gguf absent; shard names still work."""
    [path] = write_model(tmp_path / "m.gguf", "llama")
    code = (
        "import sys; sys.modules['gguf'] = None; sys.modules['gguf.constants'] = None\n"
        f"sys.path.insert(0, {str(Path(gguf_header.__file__).parents[6])!r})\n"
        "from ansible_collections.llamafleet.llamacpp.plugins.module_utils import gguf_meta as g\n"
        "assert g.shard_family('m-01-of-02.gguf') == ['m-01-of-02.gguf', 'm-02-of-02.gguf']\n"
        "try:\n"
        f"    g.read_gguf_info({str(path)!r})\n"
        "except g.GGUFError as e:\n"
        "    print(e)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert "the gguf Python package is required" in done.stdout


def test_without_the_gguf_package(tmp_path, monkeypatch):
    [path] = write_model(tmp_path / "m.gguf", "llama")
    monkeypatch.setattr(gguf_header, "GGUF_IMPORT_ERROR", ImportError("No module named 'gguf'"))
    with pytest.raises(GGUFError, match="the gguf Python package is required"):
        read_gguf_info(str(path))


def test_random_corruption_only_ever_raises_gguf_error(tmp_path, deadline):
    """Seeded byte flips over the header: a result or a GGUFError, nothing else."""
    [path] = write_model(tmp_path / "m.gguf", "qwen3next", kv=HYBRID_KV + DENSE_KV, tensors=MTP_TENSORS)
    data = path.read_bytes()
    header_end = GGUFReader(path).data_offset
    rng = random.Random(1234)
    target = tmp_path / "fuzz.gguf"
    outcomes = {"ok": 0, "error": 0}
    for _case in range(400):
        mutated = bytearray(data)
        for _flip in range(rng.randint(1, 4)):
            mutated[rng.randrange(header_end)] = rng.choice([0, 1, 0x7F, 0x80, 0xFF, rng.randrange(256)])
        target.write_bytes(bytes(mutated))
        clear_cache()
        try:
            read_gguf_info(str(target))
            outcomes["ok"] += 1
        except GGUFError:
            outcomes["error"] += 1
    assert outcomes["error"] > 0
    assert outcomes["ok"] > 0


# ---------------------------------------------------------------- cache


@pytest.fixture
def count_walks(monkeypatch) -> list[str]:
    walked: list[str] = []
    real = gguf_header._walk_file

    def counting(path: str):
        walked.append(os.path.basename(path))
        return real(path)

    monkeypatch.setattr(gguf_header, "_walk_file", counting)
    return walked


def test_cache_hits_until_size_or_mtime_changes(tmp_path, count_walks):
    [path] = write_model(tmp_path / "m.gguf", "llama", kv=DENSE_KV, tensors=DENSE_TENSORS)
    first = read_gguf_info(str(path))
    assert read_gguf_info(str(path)) == first
    assert count_walks == ["m.gguf"]
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    read_gguf_info(str(path))
    assert count_walks == ["m.gguf"] * 2
    with path.open("ab") as handle:
        handle.write(b"\0")
    read_gguf_info(str(path))
    assert count_walks == ["m.gguf"] * 3


def test_cache_is_keyed_by_first_shard_and_watches_every_shard(tmp_path, count_walks):
    files = write_split(tmp_path, small_first_shard=True)
    info = read_gguf_info(str(files[2]))
    assert read_gguf_info(str(files[0])) == info
    assert read_gguf_info(str(files[1])) == info
    assert len(count_walks) == 3  # one walk per shard, once
    with files[2].open("ab") as handle:
        handle.write(b"\0")
    read_gguf_info(str(files[1]))
    assert len(count_walks) == 6
    files[1].unlink()
    with pytest.raises(GGUFError, match="missing"):
        read_gguf_info(str(files[0]))


def test_cache_is_cleared_when_full(tmp_path, count_walks):
    [path] = write_model(tmp_path / "m.gguf", "llama")
    paths = [path]
    for i in range(1, gguf_header.CACHE_MAX + 1):
        paths.append(tmp_path / f"m{i}.gguf")
        paths[-1].write_bytes(path.read_bytes())
    for p in paths[: gguf_header.CACHE_MAX]:
        read_gguf_info(str(p))
    assert len(gguf_header._cache) == gguf_header.CACHE_MAX
    read_gguf_info(str(paths[0]))
    assert len(count_walks) == gguf_header.CACHE_MAX  # still cached
    read_gguf_info(str(paths[-1]))  # the 257th entry clears the cache first
    assert len(gguf_header._cache) == 1
    read_gguf_info(str(paths[0]))
    assert len(count_walks) == gguf_header.CACHE_MAX + 2


def test_errors_are_not_cached(tmp_path):
    path = tmp_path / "m.gguf"
    path.write_bytes(b"GGUF")
    with pytest.raises(GGUFError):
        read_gguf_info(str(path))
    write_model(path, "llama")
    assert read_gguf_info(str(path)).arch == "llama"


# ---------------------------------------------------------------- shard families (spec 16.2)

FAMILIES = [
    ("model.gguf", ["model.gguf"]),
    ("/models/sub/model.gguf", ["model.gguf"]),
    ("m-00002-of-00003.gguf", ["m-00001-of-00003.gguf", "m-00002-of-00003.gguf", "m-00003-of-00003.gguf"]),
    ("dir/m-00001-of-00002.gguf", ["m-00001-of-00002.gguf", "m-00002-of-00002.gguf"]),
    ("m-02-of-03.gguf", ["m-01-of-03.gguf", "m-02-of-03.gguf", "m-03-of-03.gguf"]),
    ("m-001-of-2.gguf", ["m-001-of-2.gguf"]),  # total needs 2..5 digits: plain
    ("m-1-of-02.gguf", ["m-1-of-02.gguf"]),  # index needs 2..5 digits: plain
    ("m-001-of-10.gguf", [f"m-{i:03d}-of-10.gguf" for i in range(1, 11)]),  # index width kept, total verbatim
    ("m-9-of-10.gguf", ["m-9-of-10.gguf"]),
    ("m-08-of-010.gguf", [f"m-{i:02d}-of-010.gguf" for i in range(1, 11)]),
    ("M-00001-OF-00002.GGUF", ["M-00001-OF-00002.GGUF", "M-00002-OF-00002.GGUF"]),  # case kept verbatim
    ("m-00001-Of-00002.Gguf", ["m-00001-Of-00002.Gguf", "m-00002-Of-00002.Gguf"]),
    ("m-00004-of-00003.gguf", ["m-00004-of-00003.gguf"]),  # index > total: plain
    ("m-00000-of-00003.gguf", ["m-00000-of-00003.gguf"]),  # 0-of-N: plain
    ("m-00001-of-00000.gguf", ["m-00001-of-00000.gguf"]),
    ("m-000001-of-000002.gguf", ["m-000001-of-000002.gguf"]),  # six digits: plain
    ("m-00001-of-00002.gguf.part", ["m-00001-of-00002.gguf.part"]),  # suffix not at the end
    ("m-٠١-of-٠٢.gguf", ["m-٠١-of-٠٢.gguf"]),  # non-ASCII digits do not count
    ("m-00001-of-00001.gguf", ["m-00001-of-00001.gguf"]),
    ("qwen-7b-00001-of-00002-00001-of-00002.gguf", [
        "qwen-7b-00001-of-00002-00001-of-00002.gguf", "qwen-7b-00001-of-00002-00002-of-00002.gguf",
    ]),  # only the last suffix counts
    ("-01-of-02.gguf", ["-01-of-02.gguf", "-02-of-02.gguf"]),
]  # fmt: skip


@pytest.mark.parametrize(("name", "expected"), FAMILIES, ids=[n for n, _expected in FAMILIES])
def test_shard_family(name, expected):
    assert shard_family(name) == expected


SHARD_INFO = [
    ("model.gguf", None, False),
    ("m-00001-of-00003.gguf", (1, 3), False),
    ("m-00002-of-00003.gguf", (2, 3), True),
    ("m-00003-of-00003.GGUF", (3, 3), True),
    ("m-00004-of-00003.gguf", None, False),
    ("m-00000-of-00003.gguf", None, False),
    ("m-99999-of-99999.gguf", (99999, 99999), True),
    ("/a/b/m-02-of-02.gguf", (2, 2), True),
]


@pytest.mark.parametrize(("name", "info", "follower"), SHARD_INFO, ids=[n for n, _info, _follower in SHARD_INFO])
def test_shard_info_and_followers(name, info, follower):
    assert shard_info(name) == info
    assert is_follower_shard(name) is follower


def test_shard_family_missing_and_size(tmp_path):
    (tmp_path / "m-00001-of-00004.gguf").write_bytes(b"x" * 10)
    (tmp_path / "m-00002-of-00004.gguf").mkdir()  # a directory is not a shard
    (tmp_path / "elsewhere.bin").write_bytes(b"y" * 7)
    (tmp_path / "m-00003-of-00004.gguf").symlink_to(tmp_path / "elsewhere.bin")  # a link to a file is
    (tmp_path / "plain.gguf").write_bytes(b"z" * 3)
    directory = str(tmp_path)
    assert shard_family_missing(directory, "m-00003-of-00004.gguf") == [
        "m-00002-of-00004.gguf",
        "m-00004-of-00004.gguf",
    ]
    assert shard_family_size(directory, "m-00001-of-00004.gguf") == 17
    assert shard_family_missing(directory, "plain.gguf") == []
    assert shard_family_size(directory, "plain.gguf") == 3
    assert shard_family_missing(directory, "absent.gguf") == ["absent.gguf"]
    assert shard_family_size(directory, "absent.gguf") == 0
    assert shard_family_missing(str(tmp_path / "nowhere"), "m-01-of-02.gguf") == ["m-01-of-02.gguf", "m-02-of-02.gguf"]
    assert shard_family_size(str(tmp_path / "nowhere"), "m-01-of-02.gguf") == 0


# ---------------------------------------------------------------- the real Gemma file (scripts/fetch_model.sh)

GEMMA = (
    Path(os.environ.get("LLAMAFLEET_CACHE", Path.home() / ".cache" / "llamafleet"))
    / "models"
    / "gemma-3-270m-q4_k_m.gguf"
)


@pytest.mark.skipif(not GEMMA.is_file(), reason=f"real model not fetched: run scripts/fetch_model.sh (expects {GEMMA})")
def test_real_gemma_file_matches_gguf_reader():
    info = read_gguf_info(str(GEMMA))
    assert info.arch == "gemma3"
    assert (info.block_count, info.context_length, info.embedding_length) == (18, 32768, 640)
    assert (info.head_count, info.head_count_kv, info.key_len, info.val_len) == (4, 1, 256, 256)
    assert (info.hybrid, info.has_nextn_tensor, info.tensor_count, info.version) == (False, False, 236, 3)
    assert info == reader_opinion([GEMMA])  # GGUFReader takes ~10 s on this file (262,144-token vocabulary)


def test_the_disk_cache_serves_an_unchanged_model_and_misses_a_changed_one(tmp_path, monkeypatch):
    [path] = write_model(tmp_path / "m.gguf", "llama", kv=DENSE_KV, tensors=DENSE_TENSORS)
    cache = tmp_path / "cache"
    walked = []
    real_walk = gguf_header._walk_file

    def counting_walk(p):
        walked.append(p)
        return real_walk(p)

    monkeypatch.setattr(gguf_header, "_walk_file", counting_walk)
    gguf_header._cache.clear()
    first = gguf_header.read_gguf_info(str(path), cache_dir=str(cache), write_cache=False)
    assert not cache.exists()  # a read-only caller writes nothing
    gguf_header._cache.clear()
    assert gguf_header.read_gguf_info(str(path), cache_dir=str(cache), write_cache=True) == first
    assert len(walked) == 2
    gguf_header._cache.clear()  # a new module run: only the disk cache is left
    assert gguf_header.read_gguf_info(str(path), cache_dir=str(cache)) == first
    assert len(walked) == 2
    os.utime(path, ns=(1, 1))  # rewritten (another mtime): walked again
    gguf_header._cache.clear()
    assert gguf_header.read_gguf_info(str(path), cache_dir=str(cache)) == first
    assert len(walked) == 3
    [entry] = list(cache.iterdir())
    entry.write_text("{not json")  # a damaged cache file is a miss, not an error
    gguf_header._cache.clear()
    assert gguf_header.read_gguf_info(str(path), cache_dir=str(cache)) == first


def test_the_constants_come_from_gguf_without_numpy():
    assert gguf_header.GGUF_IMPORT_ERROR is None
    assert gguf_header.GGUFValueType.STRING == 8
    assert gguf_header.Keys.General.ARCHITECTURE == "general.architecture"
