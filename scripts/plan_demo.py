"""Print the plan llamafleet makes for a preset on a described host.

Usage: plan_demo.py [PRESET] [HOST_FACTS_JSON]
  PRESET           a config.env file (Loki format) or a YAML mapping; default:
                   the embedded example below
  HOST_FACTS_JSON  HostFacts fields as JSON; default: the embedded example
                   host (two 24 GiB NVIDIA cards, 128 GiB RAM)

Pure planning only: nothing is probed or started. The module
llama_server_plan does the same with facts probed on the target.
"""

from __future__ import annotations

import json
import os
import sys

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, _ROOT)
import yaml  # noqa: E402

import conftest  # noqa: E402

conftest.collection_path()  # makes ansible_collections.llamafleet.llamacpp importable
from ansible_collections.llamafleet.llamacpp.plugins.module_utils import planner  # noqa: E402

EXAMPLE_PRESET = """\
# NAME=Qwen3-30B-A3B on two cards
BIN=/opt/llama.cpp/bin/llama-server
MODEL=Qwen3-30B-A3B-Q4_K_M.gguf
CTX=65536
NGL=999
PORT=8081
REASONING=on
CACHE_RAM=auto
SPEC=ngram
EXTRA_ARGS=--jinja --mlock
"""

EXAMPLE_HELP = (
    "-ngl, --gpu-layers, --n-gpu-layers N  max. number of layers to store in VRAM: a number, 'auto' or 'all'\n"
    "-lm, --load-mode MODE\n--fit [on|off]\n--fit-target MiB\n--cache-ram N\n--slot-save-path PATH\n"
    "--ctx-checkpoints N\n--checkpoint-min-step N\n--reasoning [on|off|auto]\n--no-reasoning-preserve\n"
    "--no-kv-unified\n--spec-type [none|ngram-mod|draft-simple|draft-mtp]\n--spec-draft-n-max N\n"
    "--spec-draft-sampling {greedy,probabilistic}\n--spec-ngram-mod-n-match N\n--api-key-file FNAME\n"
    "--jinja\n--mlock\n"
)

EXAMPLE_HOST = {
    "help": EXAMPLE_HELP,
    "model": "/srv/models/Qwen3-30B-A3B-Q4_K_M.gguf",
    "model_bytes": 18_556_688_384,
    "ram_mib": 128_000,
    "ram_avail_mib": 120_000,
    "vram_mib": 49_152,
    "gpus": 2,
    "slot_dir": "/var/lib/llamafleet/main/slots",
    "api_key_file": "/run/credentials/llama-server-main.service/api_key",
    "gguf": {
        "arch": "qwen3moe", "block_count": 48, "context_length": 40960, "expert_count": 128,
        "key_len": 128, "val_len": 128, "head_count": 32, "head_count_kv": 4, "embedding_length": 2048,
    },
}


def load_preset(path: str | None) -> dict[str, str]:
    if path is None:
        return planner.parse_env(EXAMPLE_PRESET)
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    if path.endswith((".yml", ".yaml")):
        return planner.normalize_preset(yaml.safe_load(text) or {})
    return planner.parse_env(text)


def load_facts(path: str | None) -> planner.HostFacts:
    data = dict(EXAMPLE_HOST)
    if path is not None:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    if isinstance(data.get("gguf"), dict):
        gguf = dict(data["gguf"])
        if "head_count_kv_layers" in gguf:
            gguf["head_count_kv_layers"] = tuple(gguf["head_count_kv_layers"])
        data["gguf"] = planner.GGUFInfo(**gguf)
    if isinstance(data.get("cpu"), dict):
        data["cpu"] = planner.CpuBudget(**data["cpu"])
    return planner.HostFacts(**data)


def main(argv: list[str]) -> int:
    preset = load_preset(argv[1] if len(argv) > 1 else None)
    facts = load_facts(argv[2] if len(argv) > 2 else None)
    result = planner.plan(preset, facts)
    print(json.dumps(
        {
            "argv": result.argv,
            "env": result.env,
            "notes": [n.as_dict() for n in result.notes],
            "warnings": [n.as_dict() for n in result.warnings],
            "refusal": result.refusal.as_dict() if result.refusal else None,
        },
        indent=2,
        ensure_ascii=False,
    ))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
