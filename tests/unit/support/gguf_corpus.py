"""GGUF files for the reader's tests and benchmarks: written with GGUFWriter or encoded by hand.

Shared by tests/unit/plugins/module_utils/_probes/test_gguf_header.py and bench/gguf_hostile.py. The
hand encoder (``Raw``) builds what GGUFWriter refuses to write: truncated,
oversized, mis-aligned and otherwise hostile files, from the format as the
gguf package writes it (gguf 0.19.0, gguf_writer.py) and as spec 4.3
documents it. Nothing here is captured from a real model.

Needs the ``gguf`` and ``numpy`` packages (requirements-dev.txt).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from gguf import GGUFEndian, GGUFReader, GGUFValueType, GGUFWriter

T = GGUFValueType
HUGE = 2**62

# ---------------------------------------------------------------- writing real files with GGUFWriter


def write_model(
    path: Path,
    arch: str,
    kv: Sequence[tuple[str, object, GGUFValueType] | tuple[str, object, GGUFValueType, GGUFValueType]] = (),
    tensors: Sequence[tuple[str, tuple[int, ...]]] = (("token_embd.weight", (4, 8)),),
    *,
    endianess: GGUFEndian = GGUFEndian.LITTLE,
    alignment: int | None = None,
    split_max_tensors: int = 0,
    small_first_shard: bool = False,
) -> list[Path]:
    """Write a model with GGUFWriter; returns the files written (several when split)."""
    writer = GGUFWriter(
        path, arch, endianess=endianess, split_max_tensors=split_max_tensors, small_first_shard=small_first_shard
    )
    for key, value, vtype, *sub in kv:
        writer.add_key_value(key, value, vtype, sub_type=sub[0] if sub else None)
    if alignment is not None:
        writer.add_custom_alignment(alignment)
    for name, shape in tensors:
        writer.add_tensor(name, np.arange(np.prod(shape), dtype=np.float32).reshape(shape))
    files = writer.format_shard_names(path)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return files


VOCAB = [f"tok{i}" for i in range(300)] + ["", "▁héllo", "<|end|>"]

# A dense llama-like model, with the usual tokenizer arrays and float keys to skip.
DENSE_KV = [
    ("general.name", "tiny llama", T.STRING),
    ("llama.context_length", 4096, T.UINT32),
    ("llama.embedding_length", 256, T.UINT32),
    ("llama.block_count", 4, T.UINT32),
    ("llama.feed_forward_length", 688, T.UINT32),
    ("llama.attention.head_count", 8, T.UINT32),
    ("llama.attention.head_count_kv", 2, T.UINT32),
    ("llama.attention.key_length", 32, T.UINT32),
    ("llama.attention.value_length", 32, T.UINT32),
    ("llama.rope.freq_base", 10000.0, T.FLOAT32),
    ("llama.attention.layer_norm_rms_epsilon", 1e-5, T.FLOAT32),
    ("general.some_f64", 0.5, T.FLOAT64),
    ("tokenizer.ggml.model", "llama", T.STRING),
    ("tokenizer.ggml.tokens", VOCAB, T.ARRAY, T.STRING),
    ("tokenizer.ggml.scores", [0.0] * len(VOCAB), T.ARRAY, T.FLOAT32),
    ("tokenizer.ggml.token_type", [1] * len(VOCAB), T.ARRAY, T.INT32),
    ("tokenizer.ggml.add_bos_token", True, T.BOOL),
    ("general.tags", ["a", "b"], T.ARRAY, T.STRING),
]
DENSE_TENSORS = [("token_embd.weight", (8, 16))] + [(f"blk.{i}.attn_q.weight", (4, 4)) for i in range(4)]

# A hybrid (recurrent + attention) model: ssm keys and a per-layer head_count_kv array.
HYBRID_KV = [
    ("qwen3next.context_length", 262144, T.UINT32),
    ("qwen3next.embedding_length", 2048, T.UINT32),
    ("qwen3next.block_count", 8, T.UINT32),
    ("qwen3next.expert_count", 64, T.UINT32),
    ("qwen3next.full_attention_interval", 4, T.UINT32),
    ("qwen3next.attention.head_count", 16, T.UINT32),
    ("qwen3next.attention.head_count_kv", [0, 0, 0, 2, 0, 0, 0, 2], T.ARRAY, T.UINT32),
    ("qwen3next.attention.key_length", 256, T.UINT32),
    ("qwen3next.attention.value_length", 256, T.UINT32),
    ("qwen3next.ssm.conv_kernel", 4, T.UINT32),
    ("qwen3next.ssm.inner_size", 4096, T.UINT32),
    ("qwen3next.ssm.state_size", 128, T.UINT32),
    ("qwen3next.ssm.group_count", 16, T.UINT32),
    ("qwen3next.ssm.time_step_rank", 32, T.UINT32),
]

# An MoE model with a multi-token-prediction head in its last block.
MTP_KV = [
    ("glm4moe.block_count", 4, T.UINT32),
    ("glm4moe.nextn_predict_layers", 1, T.UINT32),
    ("glm4moe.expert_count", 8, T.UINT32),
    ("glm4moe.context_length", 131072, T.UINT32),
    ("glm4moe.attention.head_count", 12, T.UINT32),
    ("glm4moe.attention.head_count_kv", 4, T.UINT32),
]
MTP_TENSORS = [("token_embd.weight", (4, 4)), ("blk.3.nextn.eh_proj.weight", (4, 8))]


def write_split(directory: Path, *, small_first_shard: bool) -> list[Path]:
    tensors = [("token_embd.weight", (4, 4)), ("blk.0.attn_q.weight", (4,)), ("blk.3.nextn.eh_proj.weight", (4, 8))]
    files = write_model(
        directory / "glm.gguf", "glm4moe", kv=MTP_KV, tensors=tensors,
        split_max_tensors=1 if not small_first_shard else 2, small_first_shard=small_first_shard,
    )  # fmt: skip
    return files


# ---------------------------------------------------------------- hand-encoded files


class Raw:
    """Encode GGUF pieces by hand, to build files GGUFWriter refuses to write."""

    def __init__(self, version: int = 3, order: str = "<") -> None:
        self.version = version
        self.order = order
        self.count_fmt = "I" if version == 1 else "Q"
        self.dim_fmt = "I" if version == 1 else "Q"

    def pack(self, fmt: str, *values) -> bytes:
        return struct.pack(self.order + fmt, *values)

    def count(self, n: int) -> bytes:
        return self.pack(self.count_fmt, n)

    def string(self, text: str | bytes) -> bytes:
        data = text.encode() if isinstance(text, str) else text
        return self.count(len(data)) + data

    def kv(self, key: str | bytes, vtype: int, payload: bytes) -> bytes:
        return self.string(key) + self.pack("I", vtype) + payload

    def u32(self, key: str, value: int) -> bytes:
        return self.kv(key, T.UINT32, self.pack("I", value))

    def text(self, key: str, value: str) -> bytes:
        return self.kv(key, T.STRING, self.string(value))

    def array(self, elem_type: int, count: int, body: bytes = b"") -> bytes:
        return self.pack("I", elem_type) + self.count(count) + body

    def tensor(
        self, name: str | bytes, dims: Sequence[int] = (8,), offset: int = 0, n_dims: int | None = None
    ) -> bytes:
        return (
            self.string(name)
            + self.pack("I", len(dims) if n_dims is None else n_dims)
            + b"".join(self.pack(self.dim_fmt, d) for d in dims)
            + self.pack("I", 0)
            + self.pack("Q", offset)
        )

    def header(self, n_tensors: int, n_kv: int, magic: bytes = b"GGUF", version: int | None = None) -> bytes:
        return (
            magic
            + self.pack("I", self.version if version is None else version)
            + self.count(n_tensors)
            + self.count(n_kv)
        )

    def file(
        self,
        kvs: Sequence[bytes] = (),
        tensors: Sequence[bytes] = (),
        data: bytes = bytes(64),
        alignment: int = 32,
        **header,
    ) -> tuple[bytes, list[int]]:
        """The file and the offsets where its sections end (header, each kv, each tensor, data start)."""
        header.setdefault("n_tensors", len(tensors))
        header.setdefault("n_kv", len(kvs))
        out = self.header(**header)
        marks = [len(out)]
        for piece in [*kvs, *tensors]:
            out += piece
            marks.append(len(out))
        if tensors:
            out += bytes(-len(out) % alignment)
            marks.append(len(out))
            out += data
        return out, marks


def base_kvs(raw: Raw) -> list[bytes]:
    return [
        raw.text("general.architecture", "llama"),
        raw.u32("llama.block_count", 2),
        raw.u32("llama.context_length", 2048),
        raw.kv("llama.attention.head_count_kv", T.ARRAY, raw.array(T.UINT16, 2, raw.pack("2H", 4, 2))),
        raw.kv(
            "tokenizer.ggml.tokens",
            T.ARRAY,
            raw.array(T.STRING, 3, raw.string("a") + raw.string("") + raw.string("bc")),
        ),
    ]


def base_tensors(raw: Raw) -> list[bytes]:
    return [raw.tensor("token_embd.weight", (4, 2), 0), raw.tensor("blk.1.nextn.eh_proj.weight", (8,), 32)]


def put(directory: Path, data: bytes, name: str = "m.gguf") -> str:
    path = directory / name
    path.write_bytes(data)
    return str(path)


# ---------------------------------------------------------------- truncation points


def section_cuts(version: int, order: str = "<") -> tuple[bytes, list[int], int]:
    """A small hand-encoded model, the lengths to cut it at, and the shortest valid length.

    Cuts: the first bytes of the header and every section boundary (header,
    each kv, each tensor, data start) with one byte either side; every cut
    must raise. One byte of the last tensor's data is enough for the offset
    check of spec 4.3, so ``data[:valid]`` reads.
    """
    raw = Raw(version, order)
    data, marks = raw.file(base_kvs(raw), base_tensors(raw))
    last_tensor_start = marks[-1] + 32
    cuts = {0, 2, 4, 6, 8, *marks, *(m - 1 for m in marks), *(m + 1 for m in marks), last_tensor_start}
    return data, sorted(c for c in cuts if 0 <= c <= last_tensor_start), last_tensor_start + 1


def write_truncation_model(path: Path) -> tuple[bytes, int]:
    """A small hybrid model with an MTP tensor; (its bytes, absolute offset of its last tensor's data).

    Every cut from 0 to that offset (included) must raise: the data of the
    last tensor is then missing.
    """
    [written] = write_model(path, "qwen3next", kv=HYBRID_KV + DENSE_KV[12:], tensors=MTP_TENSORS)
    reader = GGUFReader(written)
    return written.read_bytes(), max(t.data_offset for t in reader.tensors)


def one_kv(raw: Raw, piece: bytes) -> bytes:
    return raw.file([raw.text("general.architecture", "llama"), piece], base_tensors(raw))[0]


def hostile_files() -> dict[str, tuple[bytes, str]]:
    """name -> (file, regex the GGUFError message must match: proves which check fired)."""
    r = Raw()
    r1 = Raw(1)
    arch = r.text("general.architecture", "llama")
    nested = r.array(
        T.ARRAY, 1, r.array(T.ARRAY, 1, r.array(T.ARRAY, 1, r.array(T.ARRAY, 1, r.array(T.UINT8, 1, b"\1"))))
    )
    deep = r.array(T.UINT8, 1, b"\1")
    for _level in range(199):
        deep = r.array(T.ARRAY, 1, deep)
    return {
        "wrong-magic": (b"GGUL" + one_kv(r, r.u32("a", 1))[4:], "bad magic"),
        "empty-file": (b"", "truncated"),
        "magic-only": (b"GGUF", "truncated: version"),
        "version-0": (r.header(0, 0, version=0), "unsupported GGUF version 0"),
        "version-4": (r.header(0, 0, version=4), "unsupported GGUF version 4"),
        "version-big-endian-4": (r.header(0, 0, version=0x04000000), "unsupported GGUF version"),
        "version-65536": (r.header(0, 0, version=0x10000), "unsupported GGUF version"),
        "kv-count-over-2^20": (r.header(0, (1 << 20) + 1) + arch * 4, "kv count 1048577 exceeds"),
        "tensor-count-over-2^22": (r.header((1 << 22) + 1, 0) + bytes(64), "tensor count 4194305 exceeds"),
        "kv-count-larger-than-file": (r.header(0, 1000) + arch, "truncated: key length"),
        "tensor-count-larger-than-file": (r.header(1000, 0) + r.tensor("a"), "truncated: tensor name length"),
        "v1-header-cut": (r1.header(0, 2)[:-2], "truncated: kv count"),
        "key-longer-than-64KiB": (
            r.header(0, 1) + r.kv("k" * (64 * 1024 + 1), T.UINT32, r.pack("I", 1)),
            "key of 65537 bytes exceeds",
        ),
        "key-length-larger-than-file": (r.header(0, 1) + r.count(1000) + b"general", "truncated: key needs 1000"),
        "key-length-huge": (r.header(0, 1) + r.count(HUGE) + b"general", "key of .* bytes exceeds"),
        "string-length-larger-than-file": (
            r.header(0, 1) + r.kv("general.name", T.STRING, r.count(1 << 20) + b"x"),
            "truncated: general.name",
        ),
        "string-longer-than-64MiB": (
            r.header(0, 1) + r.kv("general.name", T.STRING, r.count((64 << 20) + 1)),
            "exceeds 67108864",
        ),
        "arch-string-length-huge": (
            r.header(0, 1) + r.kv("general.architecture", T.STRING, r.count(HUGE) + b"x"),
            "exceeds 67108864",
        ),
        "unknown-value-type-13": (one_kv(r, r.kv("x", 13, r.pack("I", 1))), "unknown value type 13"),
        "unknown-value-type-huge": (one_kv(r, r.kv("x", 0xFFFFFFFF, r.pack("I", 1))), "unknown value type"),
        "unknown-array-element-type": (
            one_kv(r, r.kv("x", T.ARRAY, r.array(42, 1, b"\0" * 8))),
            "unknown array element type 42",
        ),
        "array-of-u8-longer-than-file": (one_kv(r, r.kv("x", T.ARRAY, r.array(T.UINT8, 1 << 30))), "truncated: array"),
        "array-of-f64-count-huge": (one_kv(r, r.kv("x", T.ARRAY, r.array(T.FLOAT64, HUGE))), "truncated: array"),
        "string-array-count-huge": (one_kv(r, r.kv("x", T.ARRAY, r.array(T.STRING, HUGE))), "truncated: string array"),
        "string-array-count-just-over": (
            r.header(0, 1) + r.kv("x", T.ARRAY, r.array(T.STRING, 3, r.string("ab") * 2)),
            "truncated",
        ),
        "string-in-array-longer-than-file": (
            one_kv(r, r.kv("x", T.ARRAY, r.array(T.STRING, 1, r.count(1 << 20)))),
            "truncated: string of 1048576",
        ),
        # The last string of the last key of a file without tensors: nothing after it would notice.
        "last-string-in-array-cut-no-tensors": (
            r.header(0, 2) + arch + r.kv("x", T.ARRAY, r.array(T.STRING, 2, r.string("ab") + r.count(5) + b"abc")),
            "truncated: string of 5 bytes",
        ),
        "string-in-array-over-64MiB": (
            one_kv(r, r.kv("x", T.ARRAY, r.array(T.STRING, 1, r.count((64 << 20) + 1)))),
            "exceeds 67108864",
        ),
        "nested-array-count-huge": (one_kv(r, r.kv("x", T.ARRAY, r.array(T.ARRAY, HUGE))), "truncated: nested array"),
        "nested-arrays-depth-5": (one_kv(r, r.kv("x", T.ARRAY, nested)), "nested deeper than 4"),
        "nested-arrays-depth-200": (one_kv(r, r.kv("x", T.ARRAY, deep)), "nested deeper than 4"),
        "head-count-kv-array-longer-than-file": (
            one_kv(r, r.kv("llama.attention.head_count_kv", T.ARRAY, r.array(T.UINT32, 65536, r.pack("I", 4)))),
            "truncated: array",
        ),
        "alignment-0": (one_kv(r, r.u32("general.alignment", 0)), "alignment 0 is not a power of two"),
        "alignment-3": (one_kv(r, r.u32("general.alignment", 3)), "alignment 3 is not a power of two"),
        "alignment-2^21": (one_kv(r, r.u32("general.alignment", 1 << 21)), "alignment 2097152 is not"),
        "alignment-negative": (
            one_kv(r, r.kv("general.alignment", T.INT32, r.pack("i", -32))),
            "alignment -32 is not",
        ),
        "alignment-a-string": (one_kv(r, r.text("general.alignment", "32")), "alignment is not an integer"),
        "alignment-a-float": (
            one_kv(r, r.kv("general.alignment", T.FLOAT32, r.pack("f", 32.0))),
            "alignment is not an integer",
        ),
        "alignment-a-bool": (one_kv(r, r.kv("general.alignment", T.BOOL, b"\1")), "alignment is not an integer"),
        "duplicate-key": (
            r.file([arch, r.u32("llama.block_count", 1), r.u32("llama.block_count", 2)])[0],
            "duplicate key",
        ),
        "tensor-name-over-4096": (r.file([arch], [r.tensor("t" * 4097)])[0], "tensor name of 4097 bytes exceeds"),
        "tensor-name-length-huge": (r.header(1, 0) + r.count(HUGE) + b"t", "tensor name of .* exceeds"),
        "tensor-n-dims-9": (r.file([arch], [r.tensor("t", (1,) * 9)])[0], "has 9 dimensions"),
        "tensor-n-dims-huge-no-dims": (
            r.header(1, 0) + r.string("t") + r.pack("I", 0xFFFFFFFF),
            "has 4294967295 dimensions",
        ),
        "tensor-dims-cut": (r.header(1, 0) + r.string("t") + r.pack("I", 4) + r.pack("Q", 1), "truncated: tensor dims"),
        "tensor-offset-past-file": (r.file([arch], [r.tensor("t", (4,), offset=1 << 40)])[0], "tensor data cut short"),
        "tensor-offset-u64-max": (r.file([arch], [r.tensor("t", (4,), offset=2**64 - 1)])[0], "tensor data cut short"),
        "tensor-offset-past-data": (
            r.file([arch], [r.tensor("t", (4,), offset=64)], data=bytes(64))[0],
            "tensor data cut short",
        ),
        "tensor-table-without-data": (r.header(1, 1) + arch + r.tensor("t"), "tensor data cut short"),
    }
