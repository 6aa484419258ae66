"""The tiny synthetic model (scripts/tiny_model.sh) on both real engine generations and in our GGUF reader.

The model has random weights and llama.cpp's real llama-spm tokenizer: each engine must load it, tokenize
with that vocabulary, and generate exactly the tokens asked for. This is the model the GPU check
(tests/gpu/run.sh) plans and offloads, so what it proves here on CPU is what that check builds on.
The file is built by the script itself (cached), or taken from LLAMAFLEET_TINY_MODEL when that is set.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils import gguf_meta

from .conftest import REPO, Server, free_port

# The generator's shape (scripts/tiny_model.py): 2 blocks of 2 query heads sharing 1 KV head of size 64.
EXPECTED = {
    "arch": "llama",
    "block_count": 2,
    "context_length": 8192,
    "embedding_length": 128,
    "head_count": 2,
    "head_count_kv": 1,
    "key_len": 0,  # not written: the engine derives 64 from embedding / heads
    "expert_count": 0,
    "hybrid": False,
    # token_embd, output_norm, and per block 2 norms + 7 matrices; no output.weight (tied to the embedding).
    "tensor_count": 2 + 2 * 9,
}
# The llama-spm vocabulary's pieces for this text ("▁Hello", "▁world"): proof the real tokenizer came along.
HELLO_WORLD_IDS = [15043, 3186]
N_PREDICT = 8


@pytest.fixture(scope="module")
def tiny_model() -> str:
    given = os.environ.get("LLAMAFLEET_TINY_MODEL", "")
    if given:
        assert Path(given).is_file(), f"LLAMAFLEET_TINY_MODEL={given}: no such file"
        return given
    built = subprocess.run(
        [str(REPO / "scripts" / "tiny_model.sh")], capture_output=True, text=True, timeout=900, check=False
    )
    if built.returncode != 0:
        pytest.fail(f"scripts/tiny_model.sh failed ({built.returncode}):\n{built.stderr[-3000:]}", pytrace=False)
    path = built.stdout.strip().splitlines()[-1]
    assert Path(path).is_file(), f"scripts/tiny_model.sh printed {path!r}, not a file"
    return path


def _post(server: Server, path: str, body: dict) -> dict:
    request = urllib.request.Request(
        server.url(path), data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=120) as resp:
        return json.loads(resp.read())


def test_collection_reader_sees_the_generated_shape(tiny_model):
    gguf_meta.clear_cache()
    info = gguf_meta.read_gguf_info(tiny_model)
    got = {name: getattr(info, name) for name in EXPECTED}
    assert got == EXPECTED
    assert info.version == 3


def test_generator_is_reproducible(tmp_path, tiny_model):
    # Regenerating from the model's own tokenizer keys must give the same bytes: the tokenizer is copied
    # verbatim (types and order), and the weights depend on the seed alone.
    again = tmp_path / "again.gguf"
    subprocess.run(
        [sys.executable, str(REPO / "scripts" / "tiny_model.py"), str(again), "--vocab-file", tiny_model],
        check=True, capture_output=True, timeout=300,
    )
    digest = [hashlib.sha256(Path(p).read_bytes()).hexdigest() for p in (tiny_model, again)]
    assert digest[0] == digest[1]
    other_seed = tmp_path / "seed1.gguf"
    subprocess.run(
        [sys.executable, str(REPO / "scripts" / "tiny_model.py"), str(other_seed), "--vocab-file", tiny_model,
         "--seed", "1"],
        check=True, capture_output=True, timeout=300,
    )
    assert other_seed.stat().st_size == again.stat().st_size
    assert hashlib.sha256(other_seed.read_bytes()).hexdigest() != digest[0]


@pytest.mark.parametrize("engine_fixture", ["engine_bin", "old_engine_bin"], ids=["current", "old"])
def test_engine_loads_tokenizes_and_completes(engine_fixture, request, tmp_path, tiny_model):
    engine = request.getfixturevalue(engine_fixture)
    argv = [engine, "-m", tiny_model, "--host", "127.0.0.1", "--port", str(free_port()), "-c", "2048", "-t", "2"]
    server = Server(argv, {}, tmp_path / "server.log")
    try:
        assert server.wait_healthy(timeout=60) == 200
        assert _post(server, "/tokenize", {"content": "Hello world"})["tokens"] == HELLO_WORLD_IDS
        assert _post(server, "/detokenize", {"tokens": HELLO_WORLD_IDS})["content"].strip() == "Hello world"
        # Noise weights may well pick the end-of-text token first: ignore it, so the count is exact.
        answer = _post(
            server, "/completion",
            {"prompt": "Hello world", "n_predict": N_PREDICT, "temperature": 0, "ignore_eos": True},
        )
    finally:
        server.stop()
    assert answer["tokens_predicted"] == N_PREDICT
    assert answer["tokens_evaluated"] > 0
    assert isinstance(answer["content"], str)
    assert answer["content"] != ""
