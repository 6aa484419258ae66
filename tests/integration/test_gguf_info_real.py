"""gguf_info through Ansible on localhost, on the real Gemma-3-270M file and on split models."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from .conftest import run_playbook


def info_task(path: str, **extra) -> str:
    args = {"path": path, **extra}
    return f"- name: Inspect\n  llamafleet.llamacpp.gguf_info: {json.dumps(args)}\n  register: results\n"


def test_gemma_metadata(tmp_path, model_path):
    proc, result = run_playbook(tmp_path, info_task(model_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert result["changed"] is False
    assert result["arch"] == "gemma3"
    assert result["block_count"] == 18
    assert result["context_length"] == 32768
    assert result["head_count_kv"] == 1
    # 18 layers x 1 KV head x (256 + 256) x 2 bytes (f16) per token.
    assert result["kv_bytes_per_token"] == {"f16": 18 * 1 * 512 * 2, "q8_0": round(18 * 1 * 512 * 34 / 32)}
    assert result["hybrid"] is False
    assert result["moe"] is False
    assert result["mtp"] is False
    # This Gemma-3-270M file carries no chat template: the engine answers its chats in ChatML (docs/planner.md).
    assert result["has_chat_template"] is False
    assert result["complete"] is True
    assert result["shards"] == [Path(model_path).name]
    assert result["size_bytes"] == Path(model_path).stat().st_size


def test_incomplete_split_model_names_missing_shards(tmp_path, model_path):
    models = tmp_path / "models"
    models.mkdir()
    # Only the first of three shards is present (its content is irrelevant to the check).
    shutil.copy(model_path, models / "big-00001-of-00003.gguf")
    proc = run_playbook(tmp_path, info_task(str(models / "big-00001-of-00003.gguf")))[0]
    assert proc.returncode != 0
    assert "big-00002-of-00003.gguf, big-00003-of-00003.gguf" in proc.stdout

    proc, result = run_playbook(tmp_path, info_task(str(models / "big-00001-of-00003.gguf"), fail_on_incomplete=False))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert result["complete"] is False
    assert result["missing_shards"] == ["big-00002-of-00003.gguf", "big-00003-of-00003.gguf"]
    assert "arch" not in result


def test_not_a_gguf_file(tmp_path):
    bogus = tmp_path / "bogus.gguf"
    bogus.write_bytes(b"not a model at all")
    proc = run_playbook(tmp_path, info_task(str(bogus)))[0]
    assert proc.returncode != 0
    assert "not a readable GGUF file" in proc.stdout
