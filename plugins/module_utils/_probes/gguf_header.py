"""GGUF header reader and shard families (spec sections 4.3, 4.4 and 16.2).

Reads only the header, the key/value section and the tensor table of every
shard of a model, never the weights, and resolves the few fields the planner
needs into a ``GGUFInfo``. Truncated or hostile files raise ``GGUFError``; they
never hang, crash, or make us allocate from a length the file announces.

Why the header walk is hand-written instead of ``gguf.GGUFReader``: the reader
builds numpy views for every value of every array, which takes 11-16 s on the
250 MB Gemma-3-270M file (262,144-token vocabulary) where this walk, skipping
arrays by their length prefixes, takes tens of milliseconds; and the bound
checks below are part of our contract (spec 4.3), not the reader's. We still
take the names and numbers of the format (value types, key names, magic,
default alignment) from the ``gguf`` package, so they stay in step with it:
from its ``constants`` module alone, loaded without the package's ``__init__``,
which would import the reader, the writer and numpy (0.2 s of every module
run on the targets measured, for nothing the walk uses).
``GGUFReader`` serves the tests as an independent second opinion.

A module run starts cold, so the resolved fields are also kept on disk, in the
plan cache, keyed by each shard's size, mtime, inode and device: an unchanged
model is read once, not on every converge (bench/gguf_header.py measures both).
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import json
import os
import re
import stat
import struct
import sys
from dataclasses import dataclass, field

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.facts import GGUFInfo
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.files import write_cache_json


def _gguf_constants():
    """gguf's constants module, loaded from the installed package without running the package's __init__."""
    already = sys.modules.get("gguf.constants")
    if already is not None:
        return already
    spec = importlib.util.find_spec("gguf")  # finds the package; does not import it
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("No module named 'gguf'")
    location = os.path.join(next(iter(spec.submodule_search_locations)), "constants.py")
    constants_spec = importlib.util.spec_from_file_location("_llamafleet_gguf_constants", location)
    if constants_spec is None or constants_spec.loader is None:
        raise ImportError(f"cannot load {location}")
    module = importlib.util.module_from_spec(constants_spec)
    constants_spec.loader.exec_module(module)
    return module


try:
    _constants = _gguf_constants()
    GGUF_DEFAULT_ALIGNMENT = _constants.GGUF_DEFAULT_ALIGNMENT
    GGUF_MAGIC = _constants.GGUF_MAGIC
    MODEL_TENSOR = _constants.MODEL_TENSOR
    TENSOR_NAMES = _constants.TENSOR_NAMES
    GGUFValueType = _constants.GGUFValueType
    Keys = _constants.Keys
    GGUF_IMPORT_ERROR: ImportError | None = None
except (ImportError, OSError, AttributeError) as exc:  # ansible-test sanity imports module_utils without gguf
    GGUF_IMPORT_ERROR = ImportError(str(exc))

# Bounds of spec 4.3 / 18.
STRING_MAX = 64 << 20
KEY_MAX = 64 << 10
TENSOR_NAME_MAX = 4096
KV_COUNT_MAX = 1 << 20
TENSOR_COUNT_MAX = 1 << 22
N_DIMS_MAX = 8
ARRAY_DEPTH_MAX = 4
LAYER_ARRAY_MAX = 65536
ALIGNMENT_MAX = 1 << 20
INT_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1
CACHE_MAX = 256

# Bytes per pread: large enough that skipping a 262k-token string array costs a
# handful of reads, small enough to stay a bounded buffer.
_CHUNK = 1 << 20

_SHARD_SUFFIX = re.compile(r"-([0-9]{2,5})(-of-)([0-9]{2,5})(\.gguf)\Z", re.IGNORECASE)


class GGUFError(ValueError):
    """The file is not a readable GGUF model (or a shard of it is missing)."""


# ---------------------------------------------------------------- shard families


def _shard_match(name: str) -> re.Match[str] | None:
    """The shard suffix of the base name, or None when it is not a valid shard."""
    match = _SHARD_SUFFIX.search(os.path.basename(name))
    if match is None:
        return None
    index, total = int(match.group(1)), int(match.group(3))
    if index < 1 or total < 1 or index > total:
        return None  # spec 16.2: treated as a plain file
    return match


def shard_info(name: str) -> tuple[int, int] | None:
    """(index, total) when the base name is a shard ``-NNNNN-of-NNNNN.gguf``, else None."""
    match = _shard_match(name)
    if match is None:
        return None
    return int(match.group(1)), int(match.group(3))


def is_follower_shard(name: str) -> bool:
    """A shard other than the first one (never listed as a model on its own)."""
    info = shard_info(name)
    return info is not None and info[0] > 1


def shard_family(name: str) -> list[str]:
    """Base names of every file of the model ``name`` belongs to (spec 16.2).

    A plain file is its own family. A shard gives all names 1..total, keeping
    the zero-padding width of its index and the rest of the suffix verbatim.
    """
    base = os.path.basename(name)
    match = _shard_match(base)
    if match is None:
        return [base]
    stem = base[: match.start()]
    width = len(match.group(1))
    separator, total_text, extension = match.group(2), match.group(3), match.group(4)
    total = int(total_text)
    return [f"{stem}-{index:0{width}d}{separator}{total_text}{extension}" for index in range(1, total + 1)]


def _is_regular_file(path: str) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def shard_family_missing(directory: str, name: str) -> list[str]:
    """Names of the family absent from ``directory`` (a directory or other non-file counts as absent)."""
    return [member for member in shard_family(name) if not _is_regular_file(os.path.join(directory, member))]


def shard_family_size(directory: str, name: str) -> int:
    """Bytes of the family's files present in ``directory`` as regular files (spec 4.4)."""
    total = 0
    for member in shard_family(name):
        try:
            st = os.stat(os.path.join(directory, member))
        except (OSError, ValueError):
            continue
        if stat.S_ISREG(st.st_mode):
            total += st.st_size
    return total


def missing_shards_message(directory: str, name: str, missing: list[str]) -> str:
    """The refusal text of spec 16.2."""
    total = len(shard_family(name))
    return (
        f"incomplete model: missing {', '.join(missing)} in {directory} — "
        f"this model has {total} files, download them all"
    )


# ---------------------------------------------------------------- the header walk


class _Cursor:
    """Sequential reads over a file through one bounded buffer.

    Every read is checked against the bytes left in the file *before* it
    happens, so an announced length can neither run past the end nor make us
    allocate more than the file holds.
    """

    def __init__(self, fd: int, size: int, path: str) -> None:
        self._fd = fd
        self.size = size
        self.path = path
        self.pos = 0
        self._buf = b""
        self._buf_start = 0

    def fail(self, what: str) -> GGUFError:
        return GGUFError(f"{self.path}: {what} (offset {self.pos})")

    def require(self, count: int, what: str) -> None:
        if count < 0 or count > self.size - self.pos:
            raise self.fail(f"truncated: {what} needs {count} bytes, {self.size - self.pos} left")

    def _fill(self, count: int) -> None:
        """Load the buffer from ``pos`` with at least ``count`` bytes."""
        self.require(count, "data")
        want = min(max(count, _CHUNK), self.size - self.pos)
        parts = []
        got = 0
        while got < want:
            data = os.pread(self._fd, want - got, self.pos + got)
            if not data:
                break
            parts.append(data)
            got += len(data)
        if got < count:
            raise self.fail("file shrank while being read")
        self._buf = b"".join(parts)
        self._buf_start = self.pos

    def _window(self, count: int) -> int:
        offset = self.pos - self._buf_start
        if offset < 0 or offset + count > len(self._buf):
            self._fill(count)
            offset = 0
        return offset

    def unpack(self, fmt: struct.Struct, what: str) -> int | float:
        self.require(fmt.size, what)
        offset = self._window(fmt.size)
        (value,) = fmt.unpack_from(self._buf, offset)
        self.pos += fmt.size
        return value

    def read(self, count: int, what: str) -> bytes:
        self.require(count, what)
        offset = self._window(count)
        self.pos += count
        return self._buf[offset : offset + count]

    def skip(self, count: int, what: str) -> None:
        self.require(count, what)
        self.pos += count

    def skip_strings(self, count: int, length: struct.Struct, limit: int) -> None:
        """Skip ``count`` length-prefixed strings (the hot loop: vocabularies)."""
        unpack_from = length.unpack_from
        width = length.size
        size = self.size
        pos = self.pos
        buf, start = self._buf, self._buf_start
        end = start + len(buf)
        for _string_index in range(count):
            if pos + width > end:
                self.pos = pos
                self._fill(width)
                buf, start = self._buf, self._buf_start
                end = start + len(buf)
            (strlen,) = unpack_from(buf, pos - start)
            pos += width
            if strlen > limit or strlen > size - pos:
                self.pos = pos
                if strlen > limit:
                    raise self.fail(f"string of {strlen} bytes in an array exceeds {limit}")
                raise self.fail(f"truncated: string of {strlen} bytes in an array, {size - pos} left")
            pos += strlen
        self.pos = pos


@dataclass
class _Format:
    """Struct codecs for one byte order and version."""

    order: str
    version: int

    def __post_init__(self) -> None:
        o = self.order
        self.u32 = struct.Struct(o + "I")
        self.u64 = struct.Struct(o + "Q")
        # v1 stores counts and lengths (and tensor dims) as u32, later versions as u64.
        self.count = self.u32 if self.version == 1 else self.u64


def _scalar_formats() -> dict[int, str]:
    t = GGUFValueType
    return {
        t.UINT8: "B", t.INT8: "b", t.UINT16: "H", t.INT16: "h", t.UINT32: "I", t.INT32: "i",
        t.FLOAT32: "f", t.BOOL: "B", t.UINT64: "Q", t.INT64: "q", t.FLOAT64: "d",
    }  # fmt: skip


@dataclass
class _Header:
    """What one file's header says, before resolution."""

    version: int = 0
    tensor_count: int = 0
    architecture: str = ""
    keys: list[str] = field(default_factory=list)
    ints: dict[str, int] = field(default_factory=dict)  # integer and bool scalars
    int_arrays: dict[str, tuple[int, ...]] = field(default_factory=dict)  # *.attention.head_count_kv
    nextn_tensors: set[str] = field(default_factory=set)  # names ending .nextn.eh_proj.weight
    # Bytes of tensor data: per block (``blk.N.``), of the input embeddings (``token_embd.``), and of the rest.
    block_bytes: dict[int, int] = field(default_factory=dict)
    embed_bytes: int = 0
    other_bytes: int = 0
    vocab_size: int = 0  # the second dimension of token_embd.weight


class _Walker:
    def __init__(self, cursor: _Cursor) -> None:
        self.cur = cursor
        self.scalars = _scalar_formats()
        self.integers = {
            GGUFValueType.UINT8, GGUFValueType.INT8, GGUFValueType.UINT16, GGUFValueType.INT16,
            GGUFValueType.UINT32, GGUFValueType.INT32, GGUFValueType.UINT64, GGUFValueType.INT64,
        }  # fmt: skip
        self.fmt = _Format("<", 3)
        self.header = _Header()

    def walk(self) -> _Header:
        """The preamble, the key/value section, then the tensor table, each bounded as it is read."""
        self._preamble()
        cur = self.cur
        tensor_count = cur.unpack(self.fmt.count, "tensor count")
        kv_count = cur.unpack(self.fmt.count, "kv count")
        if kv_count > KV_COUNT_MAX:
            raise cur.fail(f"kv count {kv_count} exceeds {KV_COUNT_MAX}")
        if tensor_count > TENSOR_COUNT_MAX:
            raise cur.fail(f"tensor count {tensor_count} exceeds {TENSOR_COUNT_MAX}")
        self.header.tensor_count = tensor_count
        self._key_values(kv_count)
        self._tensor_table(tensor_count)
        return self.header

    def _preamble(self) -> None:
        """The magic and the version, which also tells the byte order."""
        cur = self.cur
        magic = cur.read(4, "magic")
        if magic != struct.pack("<I", GGUF_MAGIC):  # the magic is the bytes "GGUF" in either byte order
            raise cur.fail("not a GGUF file (bad magic)")
        raw_version = cur.unpack(struct.Struct("<I"), "version")
        swapped = int.from_bytes(raw_version.to_bytes(4, "little"), "big")
        if 1 <= raw_version <= 3:
            self.fmt = _Format("<", raw_version)
        elif raw_version & 0xFFFF == 0 and 1 <= swapped <= 3:
            self.fmt = _Format(">", swapped)
        else:
            raise cur.fail(f"unsupported GGUF version {raw_version}")
        self.header.version = self.fmt.version
        self.scalar_structs = {vtype: struct.Struct(self.fmt.order + ch) for vtype, ch in self.scalars.items()}

    def _key_values(self, kv_count: int) -> None:
        seen: set[str] = set()
        for _kv_index in range(kv_count):
            key = self._string(KEY_MAX, "key")
            if key in seen:  # llama.cpp refuses such a file, and which value wins would be a guess
                raise self.cur.fail(f"duplicate key {key!r}")
            seen.add(key)
            self.header.keys.append(key)
            vtype = self.cur.unpack(self.fmt.u32, "value type")
            self._value(key, vtype)

    def _tensor_table(self, tensor_count: int) -> None:
        """Each tensor's name, dimensions, type and offset; the data section must hold the last one."""
        cur = self.cur
        alignment = self._alignment()
        max_offset = -1
        dim_bytes = 4 if self.fmt.version == 1 else 8
        dims_format = self.fmt.u32 if self.fmt.version == 1 else self.fmt.u64
        placed: list[tuple[int, str]] = []
        for _tensor_index in range(tensor_count):
            name = self._string(TENSOR_NAME_MAX, "tensor name")
            n_dims = cur.unpack(self.fmt.u32, "tensor n_dims")
            if n_dims > N_DIMS_MAX:
                raise cur.fail(f"tensor {name!r} has {n_dims} dimensions (max {N_DIMS_MAX})")
            if name == "token_embd.weight" and n_dims >= 2:
                cur.skip(dim_bytes, "tensor dims")
                self.header.vocab_size = min(int(cur.unpack(dims_format, "tensor dims")), INT64_MAX)
                cur.skip((n_dims - 2) * dim_bytes, "tensor dims")
            else:
                cur.skip(n_dims * dim_bytes, "tensor dims")
            cur.unpack(self.fmt.u32, "tensor type")
            offset = cur.unpack(self.fmt.u64, "tensor offset")
            max_offset = max(max_offset, offset)
            placed.append((offset, name))
            if name.endswith(".nextn.eh_proj.weight"):
                self.header.nextn_tensors.add(name)
        if tensor_count > 0:
            data_start = -(-cur.pos // alignment) * alignment
            if max_offset >= cur.size or data_start + max_offset >= cur.size:
                raise cur.fail(f"tensor data cut short: data starts at {data_start}, last tensor at +{max_offset}")
            self._tensor_bytes(placed, cur.size - data_start)

    def _tensor_bytes(self, placed: list[tuple[int, str]], data_size: int) -> None:
        """Each tensor's bytes as the distance to the next one's offset (its padding included, as the engine reads
        it), the last one's to the end of the file; summed by block, input embeddings and the rest."""
        placed.sort()
        header = self.header
        for position, (offset, name) in enumerate(placed):
            end = placed[position + 1][0] if position + 1 < len(placed) else data_size
            size = max(end - offset, 0)
            if name.startswith("blk."):
                block = name.split(".", 2)[1]
                if block.isdigit():
                    header.block_bytes[int(block)] = header.block_bytes.get(int(block), 0) + size
                    continue
            if name.startswith("token_embd."):
                header.embed_bytes += size
            else:
                header.other_bytes += size

    def _string(self, limit: int, what: str) -> str:
        length = self.cur.unpack(self.fmt.count, what + " length")
        if length > limit:
            raise self.cur.fail(f"{what} of {length} bytes exceeds {limit}")
        # surrogateescape: lossless, so distinct byte strings stay distinct keys
        return self.cur.read(length, what).decode("utf-8", "surrogateescape")

    def _value(self, key: str, vtype: int) -> None:
        cur = self.cur
        if key == Keys.General.ALIGNMENT and vtype not in self.integers:
            raise cur.fail(f"{key} is not an integer (type {vtype})")
        if vtype in self.integers:
            value = int(cur.unpack(self.scalar_structs[vtype], key))
            self.header.ints[key] = min(value, INT64_MAX)  # u64 above int64 max is clamped
        elif vtype == GGUFValueType.BOOL:
            self.header.ints[key] = int(bool(cur.unpack(self.scalar_structs[vtype], key)))
        elif vtype in self.scalar_structs:  # floats: read and ignored
            cur.skip(self.scalar_structs[vtype].size, key)
        elif vtype == GGUFValueType.STRING:
            length = cur.unpack(self.fmt.count, key + " length")
            if length > STRING_MAX:
                raise cur.fail(f"string {key!r} of {length} bytes exceeds {STRING_MAX}")
            if key == Keys.General.ARCHITECTURE:
                self.header.architecture = cur.read(length, key).decode("utf-8", "replace")
            else:
                cur.skip(length, key)
        elif vtype == GGUFValueType.ARRAY:
            self._array(key, 1)
        else:
            raise cur.fail(f"unknown value type {vtype} for key {key!r}")

    def _array(self, key: str, depth: int) -> None:
        cur = self.cur
        if depth > ARRAY_DEPTH_MAX:
            raise cur.fail(f"arrays nested deeper than {ARRAY_DEPTH_MAX} in {key!r}")
        elem_type = cur.unpack(self.fmt.u32, key + " element type")
        count = cur.unpack(self.fmt.count, key + " length")
        elem = self.scalar_structs.get(elem_type)
        if elem is not None:
            nbytes = count * elem.size
            cur.require(nbytes, f"array {key!r}")
            if (
                depth == 1
                and elem_type in self.integers
                and count <= LAYER_ARRAY_MAX
                and key.endswith(".attention.head_count_kv")
            ):
                values = struct.unpack(f"{self.fmt.order}{count}{self.scalars[elem_type]}", cur.read(nbytes, key))
                self.header.int_arrays[key] = tuple(min(v, INT64_MAX) for v in values)
            else:
                cur.skip(nbytes, f"array {key!r}")
        elif elem_type == GGUFValueType.STRING:
            # Each string needs at least its length prefix: bounds the loop by the file.
            cur.require(count * self.fmt.count.size, f"string array {key!r}")
            cur.skip_strings(count, self.fmt.count, STRING_MAX)
        elif elem_type == GGUFValueType.ARRAY:
            cur.require(count * (4 + self.fmt.count.size), f"nested array {key!r}")
            for _element_index in range(count):
                self._array(key, depth + 1)
        else:
            raise cur.fail(f"unknown array element type {elem_type} for key {key!r}")

    def _alignment(self) -> int:
        value = self.header.ints.get(Keys.General.ALIGNMENT)
        if value is None:
            return GGUF_DEFAULT_ALIGNMENT
        if value <= 0 or value > ALIGNMENT_MAX or value & (value - 1):
            raise self.cur.fail(f"general.alignment {value} is not a power of two in (0, {ALIGNMENT_MAX}]")
        return value


def _walk_file(path: str) -> _Header:
    """Walk one file's header; every failure becomes a GGUFError."""
    try:
        # O_NONBLOCK: opening a FIFO planted under the model's name must not block.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except (OSError, ValueError) as exc:
        raise GGUFError(f"cannot open {path}: {exc}") from exc
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise GGUFError(f"{path} is not a regular file")
        return _Walker(_Cursor(fd, st.st_size, path)).walk()
    except GGUFError:
        raise
    except Exception as exc:  # spec 4.3: any unexpected failure is an error, never a crash
        raise GGUFError(f"{path}: unreadable GGUF header ({type(exc).__name__}: {exc})") from exc
    finally:
        os.close(fd)


def _clamp(value: int) -> int:
    return min(max(int(value), 0), INT_MAX)


def _resolve(first: _Header, shards: list[_Header]) -> GGUFInfo:
    arch = first.architecture

    def key_int(template: str) -> int:
        return _clamp(first.ints.get(template.format(arch=arch), 0)) if arch else 0

    head_count_kv, layers = 0, ()
    if arch:
        hckv_key = Keys.Attention.HEAD_COUNT_KV.format(arch=arch)
        if hckv_key in first.int_arrays:
            layers = tuple(_clamp(v) for v in first.int_arrays[hckv_key])
            head_count_kv = max(layers, default=0)
        else:
            head_count_kv = key_int(Keys.Attention.HEAD_COUNT_KV)

    block_count = key_int(Keys.LLM.BLOCK_COUNT)
    has_nextn = False
    if block_count > 0:
        # Only the tensor of the last block proves an MTP head; the key alone proves nothing.
        wanted = TENSOR_NAMES[MODEL_TENSOR.NEXTN_EH_PROJ].format(bid=block_count - 1) + ".weight"
        has_nextn = any(wanted in shard.nextn_tensors for shard in shards)

    layer_bytes: dict[int, int] = {}
    for shard in shards:
        for block, size in shard.block_bytes.items():
            layer_bytes[block] = layer_bytes.get(block, 0) + size
    return GGUFInfo(
        version=_clamp(first.version),
        arch=arch,
        block_count=block_count,
        nextn=key_int(Keys.LLM.NEXTN_PREDICT_LAYERS),
        context_length=key_int(Keys.LLM.CONTEXT_LENGTH),
        expert_count=key_int(Keys.LLM.EXPERT_COUNT),
        key_len=key_int(Keys.Attention.KEY_LENGTH),
        val_len=key_int(Keys.Attention.VALUE_LENGTH),
        full_attn_interval=key_int(Keys.LLM.FULL_ATTENTION_INTERVAL),
        embedding_length=key_int(Keys.LLM.EMBEDDING_LENGTH),
        head_count=key_int(Keys.Attention.HEAD_COUNT),
        head_count_kv=head_count_kv,
        head_count_kv_layers=layers,
        ssm_conv=key_int(Keys.SSM.CONV_KERNEL),
        ssm_inner=key_int(Keys.SSM.INNER_SIZE),
        ssm_state=key_int(Keys.SSM.STATE_SIZE),
        ssm_groups=key_int(Keys.SSM.GROUP_COUNT),
        hybrid=bool(arch) and any(key.startswith(f"{arch}.ssm.") for key in first.keys),
        has_nextn_tensor=has_nextn,
        tensor_count=_clamp(sum(shard.tensor_count for shard in shards)),
        vocab_size=_clamp(max((shard.vocab_size for shard in shards), default=0) or key_int(Keys.LLM.VOCAB_SIZE)),
        sliding_window=key_int(Keys.Attention.SLIDING_WINDOW),
        feed_forward_length=key_int(Keys.LLM.FEED_FORWARD_LENGTH),
        layer_bytes=tuple(layer_bytes.get(block, 0) for block in range(max(layer_bytes, default=-1) + 1)),
        embed_bytes=sum(shard.embed_bytes for shard in shards),
        other_bytes=sum(shard.other_bytes for shard in shards),
        has_chat_template=Keys.Tokenizer.CHAT_TEMPLATE in first.keys,
    )


# ---------------------------------------------------------------- public entry point and cache

# first-shard path -> (identity of every shard when read, info)
_cache: dict[str, tuple[tuple[tuple[int, int, int, int], ...], GGUFInfo]] = {}


def clear_cache() -> None:
    """Forget every cached header (benchmarks and tests)."""
    _cache.clear()


def _family_paths(path: str) -> list[str]:
    directory = os.path.dirname(path) or "."
    family = shard_family(path)
    if len(family) > 1:
        missing = shard_family_missing(directory, path)
        if missing:
            raise GGUFError(missing_shards_message(directory, path, missing))
    return [os.path.join(directory, member) for member in family]


def _identity(path: str) -> tuple[int, int, int, int]:
    try:
        st = os.stat(path)
    except (OSError, ValueError) as exc:
        raise GGUFError(f"cannot read {path}: {exc}") from exc
    return (st.st_size, st.st_mtime_ns, st.st_ino, st.st_dev)


# Bumped whenever the walk or the resolved fields change meaning: older cache files are then ignored.
DISK_CACHE_FORMAT = 3


def _disk_cache_path(cache_dir: str, first: str) -> str:
    digest = hashlib.sha1(first.encode(), usedforsecurity=False).hexdigest()[:16]
    return os.path.join(cache_dir, f"gguf-{digest}.json")


def _from_disk(cache_dir: str, first: str, identity) -> GGUFInfo | None:
    try:
        with open(_disk_cache_path(cache_dir, first), encoding="utf-8") as handle:
            data = json.load(handle)
        if data.get("format") != DISK_CACHE_FORMAT or data.get("path") != first:
            return None
        if [tuple(i) for i in data.get("identity") or []] != list(identity):
            return None
        fields = dict(data["info"])
        if set(fields) != {f.name for f in dataclasses.fields(GGUFInfo)}:
            return None
        fields["head_count_kv_layers"] = tuple(fields["head_count_kv_layers"])
        fields["layer_bytes"] = tuple(fields["layer_bytes"])
        return GGUFInfo(**fields)
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None


def _to_disk(cache_dir: str, first: str, identity, info: GGUFInfo) -> None:
    write_cache_json(_disk_cache_path(cache_dir, first), {
        "format": DISK_CACHE_FORMAT, "path": first, "identity": [list(i) for i in identity],
        "info": dataclasses.asdict(info)})


def read_gguf_info(path: str, cache_dir: str = "", write_cache: bool = False) -> GGUFInfo:
    """Metadata of the model at ``path`` (any shard of a split model); raises GGUFError.

    Keys come from the first shard, tensors from all shards, and every shard
    must be present. Results are cached per first shard until the size, mtime,
    inode or device of one of its files changes: in this process, and in
    ``cache_dir`` when one is given (written only with ``write_cache``).
    """
    if GGUF_IMPORT_ERROR is not None:
        raise GGUFError(f"the gguf Python package is required to read GGUF metadata ({GGUF_IMPORT_ERROR})")
    paths = _family_paths(os.path.abspath(path))
    identity = tuple(_identity(p) for p in paths)
    cached = _cache.get(paths[0])
    if cached is not None and cached[0] == identity:
        return cached[1]  # GGUFInfo is frozen: sharing it is as good as a copy
    info = _from_disk(cache_dir, paths[0], identity) if cache_dir else None
    if info is None:
        shards = [_walk_file(p) for p in paths]
        info = _resolve(shards[0], shards)
        if cache_dir and write_cache:
            _to_disk(cache_dir, paths[0], identity, info)
    if len(_cache) >= CACHE_MAX:
        _cache.clear()
    _cache[paths[0]] = (identity, info)
    return info
