"""What gguf_info reports of a model file (_probes/model_info.py), table-driven on small files written with gguf's
own GGUFWriter: the shard fields always, the header's only when every shard is there and reads, and why not."""

import pytest
from gguf import GGUFValueType

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.model_info import model_info
from tests.unit.support.gguf_corpus import write_model, write_split

LLAMA_KV = [
    ("llama.block_count", 2, GGUFValueType.UINT32),
    ("llama.context_length", 4096, GGUFValueType.UINT32),
    ("llama.embedding_length", 64, GGUFValueType.UINT32),
    ("llama.attention.head_count", 4, GGUFValueType.UINT32),
    ("llama.attention.head_count_kv", 2, GGUFValueType.UINT32),
]
HEADER_FIELDS = {"arch", "context_length", "block_count", "head_count", "head_count_kv", "embedding_length",
                 "expert_count", "kv_bytes_per_token", "recurrent_state_bytes", "hybrid", "moe", "mtp",
                 "has_chat_template", "tensor_count", "gguf_version"}
SHARD_FIELDS = {"path", "shards", "missing_shards", "complete", "size_bytes"}


def single(tmp_path):
    (path,) = write_model(tmp_path / "m.gguf", "llama", kv=LLAMA_KV)
    return str(path)


def absent(tmp_path):
    return str(tmp_path / "none.gguf")


def broken(tmp_path):
    path = tmp_path / "b.gguf"
    path.write_bytes(b"GGUF\x03\x00")
    return str(path)


def split_missing_last(tmp_path):
    files = write_split(tmp_path, small_first_shard=False)
    files[-1].unlink()
    return str(files[0])


def split_complete(tmp_path):
    return str(write_split(tmp_path, small_first_shard=False)[1])  # any shard names the model


LAST = "glm-00003-of-00003.gguf"
CASES = [
    # name, file, fail_on_incomplete -> failure (its start; "" = none), missing shards, fields returned
    ("a single file", single, True, "", [], SHARD_FIELDS | HEADER_FIELDS),
    ("a missing file", absent, True, "model not found: {path}", ["none.gguf"], SHARD_FIELDS),
    ("a missing file, incomplete allowed", absent, False, "model not found: {path}", ["none.gguf"], SHARD_FIELDS),
    ("a broken file", broken, True, "{path}: not a readable GGUF file: ", [], SHARD_FIELDS),
    ("a missing shard", split_missing_last, True, f"incomplete model: missing {LAST} in {{dir}} — this model has 3 "
     "files, download them all", [LAST], SHARD_FIELDS),
    ("a missing shard, listed", split_missing_last, False, "", [LAST], SHARD_FIELDS),
    ("every shard", split_complete, True, "", [], SHARD_FIELDS | HEADER_FIELDS),
]


@pytest.mark.parametrize("case", CASES, ids=[case[0] for case in CASES])
def test_model_info(tmp_path, case):
    _name, make, fail_on_incomplete, failure, missing, fields = case
    path = make(tmp_path)
    result, why = model_info(path, fail_on_incomplete)
    assert why.startswith(failure.format(path=path, dir=tmp_path)), why
    assert bool(why) == bool(failure), why
    assert set(result) == fields
    assert (result["path"], result["missing_shards"], result["complete"]) == (path, missing, not missing)


def test_the_header_fields_and_the_shards(tmp_path):
    result, why = model_info(single(tmp_path), True)
    assert why == ""
    assert (result["arch"], result["context_length"], result["block_count"], result["head_count_kv"]) == (
        "llama", 4096, 2, 2)
    assert result["kv_bytes_per_token"]["f16"] > result["kv_bytes_per_token"]["q8_0"] > 0
    assert (result["moe"], result["hybrid"], result["mtp"], result["shards"]) == (False, False, False, ["m.gguf"])
    assert result["has_chat_template"] is False
    (templated,) = write_model(tmp_path / "t.gguf", "llama",
                               kv=[*LLAMA_KV, ("tokenizer.chat_template", "{{ messages }}", GGUFValueType.STRING)])
    assert model_info(str(templated), True)[0]["has_chat_template"] is True
    assert result["size_bytes"] == (tmp_path / "m.gguf").stat().st_size
    split, why = model_info(split_complete(tmp_path), True)
    assert (why, split["arch"], split["moe"], split["mtp"]) == ("", "glm4moe", True, True)
    assert split["expert_count"] == 8
    assert split["shards"] == [f"glm-0000{n}-of-00003.gguf" for n in (1, 2, 3)]
