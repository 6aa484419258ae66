"""gguf_info in-process, on small GGUF files written with gguf's own GGUFWriter (support/gguf_corpus.py)."""

from gguf import GGUFValueType

from ansible_collections.llamafleet.llamacpp.plugins.modules import gguf_info
from tests.unit.support.gguf_corpus import write_model, write_split
from tests.unit.support.module_runner import run_module

LLAMA_KV = [
    ("llama.block_count", 2, GGUFValueType.UINT32),
    ("llama.context_length", 4096, GGUFValueType.UINT32),
    ("llama.embedding_length", 64, GGUFValueType.UINT32),
    ("llama.attention.head_count", 4, GGUFValueType.UINT32),
    ("llama.attention.head_count_kv", 2, GGUFValueType.UINT32),
]


def test_a_model_is_described(tmp_path, capsys):
    (path,) = write_model(tmp_path / "m.gguf", "llama", kv=LLAMA_KV)
    result = run_module(gguf_info.main, {"path": str(path)}, capsys, check_mode=True)
    assert (result["arch"], result["context_length"], result["block_count"], result["complete"]) == (
        "llama", 4096, 2, True)
    assert result["changed"] is False
    assert result["kv_bytes_per_token"]["f16"] > result["kv_bytes_per_token"]["q8_0"] > 0


def test_a_missing_file_and_a_broken_one_fail_clearly(tmp_path, capsys):
    assert run_module(gguf_info.main, {"path": str(tmp_path / "none.gguf")}, capsys)["msg"].startswith(
        "model not found")
    broken = tmp_path / "b.gguf"
    broken.write_bytes(b"GGUF\x03\x00")
    assert "not a readable GGUF file" in run_module(gguf_info.main, {"path": str(broken)}, capsys)["msg"]


def test_an_incomplete_split_model(tmp_path, capsys):
    files = write_split(tmp_path, small_first_shard=False)
    files[-1].unlink()
    failed = run_module(gguf_info.main, {"path": str(files[0])}, capsys)
    assert failed["failed"] is True
    assert files[-1].name in failed["msg"]
    listed = run_module(gguf_info.main, {"path": str(files[0]), "fail_on_incomplete": False}, capsys)
    assert listed["missing_shards"] == [files[-1].name]
    assert "arch" not in listed
