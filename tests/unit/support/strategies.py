"""Hypothesis strategies for planner inputs: presets, EXTRA_ARGS, service environments, help texts, HostFacts.

Every preset key of spec section 3 gets values that mix the valid forms, edge
forms of them (spaces, case, signs, quotes, non-ASCII digits, huge numbers,
empty) and junk. Help texts are random subsets of the capability markers of
spec section 5.1, alone or combined with the real llama-server 11434 help,
or that real help with whole capability lines removed. HostFacts stay in the
domain the probes produce (GGUF integers clamped to [0, 2^31-1] by the reader,
sizes >= 0) but reach its extremes.

A world (preset, facts) starts from one of a few coherent templates in which
the deep rules accept (tensor split, side slot, MTP, n-grams, cache sizing,
checkpoints, load guard) and is then perturbed key by key, so random inputs
reach the deep code instead of stopping at the first refusal.
"""

from __future__ import annotations

from hypothesis import strategies as st

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.facts import (
    CpuBudget,
    GGUFInfo,
    HostFacts,
    SplitDev,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.preset_text import join_args
from tests.unit.support.helptexts import NEW_ENGINE, OLD_ENGINE
from tests.unit.support.paths import FIXTURES

REAL_HELP = (
    FIXTURES / "engine" / "llama-server-11434.0.0-cpu.help.txt"
).read_text(encoding="utf-8")

BIN = "/opt/llama/bin/llama-server"
MODEL = "/srv/models/model-q4_k_m.gguf"
DRAFT = "/srv/models/draft-q8_0.gguf"
MMPROJ = "/srv/models/mmproj-f16.gguf"
SLOT_DIR = "/var/lib/llamafleet/slots"
KEY_FILE = "/run/credentials/llama-server-main.service/api_key"
API_KEY_PREFIX = "sk-llamafleet-fuzz-"

INT32_MAX = 2**31 - 1
GIB_MIB = 1024

# ---------------------------------------------------------------- scalar pieces

BOUNDARY_NUMBERS = [
    "-2", "-1", "0", "1", "2", "3", "64", "65", "128", "512", "1023", "1024", "2048", "4096", "8192", "32768",
    "65536", "1048576", "1048577", "9999999", "10000000", "2147483647", "2147483648", "4294967296",
    "9223372036854775807", "9223372036854775808", "-2147483649", "99999999999999999999999",
]  # fmt: skip
ODD_NUMBERS = [
    "+8", "-0", "007", "1e3", "0x10", "1_000", "1.5", "٣", "１０２４", "४", " 8", "8 ", "\t8\n", "8\u200b", "∞", "nan",
]  # fmt: skip
JUNK_WORDS = [
    "", " ", "  ", "auto", "AUTO", "on", "off", "ON", "Off", "none", "true", "yes", "oui", "-", "+", ",", "/", "=",
    '"', "'", '""', "''", "\x00", "\n", "\t", "é", "🦙", "null", "None", "[]", "{}", "$HOME", "`id`", "a b",
]  # fmt: skip

JUNK = st.one_of(st.sampled_from(JUNK_WORDS), st.text(max_size=10))
NUMBERS = st.one_of(
    st.sampled_from(BOUNDARY_NUMBERS),
    st.sampled_from(ODD_NUMBERS),
    st.integers(-(2**70), 2**70).map(str),
    st.integers(-4, 70_000).map(str),
)

_FULLWIDTH = str.maketrans("0123456789", "０１２３４５６７８９")
_ARABIC_INDIC = str.maketrans("0123456789", "٠١٢٣٤٥٦٧٨٩")


def _decorations() -> list:
    """Edge forms of a valid value: what a hand-edited config.env or a YAML file produces."""
    return [
        lambda v: f" {v} ",
        lambda v: f"\t{v}",
        lambda v: v.upper(),
        lambda v: v.lower(),
        lambda v: v.title(),
        lambda v: f'"{v}"',
        lambda v: f"'{v}'",
        lambda v: f"+{v}",
        lambda v: f"-{v}",
        lambda v: f"{v}x",
        lambda v: f"0{v}",
        lambda v: f"{v},",
        lambda v: f"{v}{v}",
        lambda v: v.translate(_FULLWIDTH),
        lambda v: v.translate(_ARABIC_INDIC),
        lambda v: f"{v}\u00a0",
        lambda v: f"\u200b{v}",
        lambda v: v[:-1],
        lambda v: "",
    ]


DECORATIONS = _decorations()


def values(valid: list[str], numeric: bool = False) -> st.SearchStrategy[str]:
    """Valid forms, decorated forms and junk for one preset key."""
    base = st.sampled_from(valid)
    decorated = st.tuples(base, st.sampled_from(DECORATIONS)).map(lambda pair: pair[1](pair[0]))
    parts = [base, base, decorated, JUNK]
    if numeric:
        parts.append(NUMBERS)
    return st.one_of(*parts)


def api_keys() -> st.SearchStrategy[str]:
    """A distinctive secret (the prefix cannot come out of any other strategy), sometimes padded."""
    chars = st.characters(codec="utf-8", exclude_categories=("Cs", "Zs", "Cc"))
    body = st.text(alphabet=chars, min_size=4, max_size=24)
    return st.tuples(st.sampled_from(["", " ", "\t"]), body, st.sampled_from(["", " ", "  "])).map(
        lambda parts: f"{parts[0]}{API_KEY_PREFIX}{parts[1]}{parts[2]}"
    )


# ---------------------------------------------------------------- EXTRA_ARGS

_LAYER_VALUES = ["auto", "all", "999", "0", "-1", "28", "80", "ALL"]
_OT_VALUES = [
    "exps=CPU", r"blk\.[0-9]+\.ffn_.*_exps=CPU", "per_layer_token_embd=CPU", "attn=CUDA1", "exps=CPU,attn=cpu",
    "=CPU", "exps=", "exps", ".*=CUDA0",
]  # fmt: skip
_KV_VALUES = ["f16", "bf16", "f32", "q8_0", "q5_0", "q5_1", "q4_0", "q4_1", "iq4_nl", "Q8_0", "q2_k", ""]

# Flags the rules read (spec sections 1.6-14), with the values they care about.
EXTRA_FLAGS: dict[str, list[str]] = {
    "-c": ["0", "4096", "32768", "-1", "auto"],
    "--ctx-size": ["8192", "0"],
    "-t": ["4", "0", "-1", "junk"],
    "--threads": ["8"],
    "-tb": ["4", "0"],
    "--threads-batch": ["2"],
    "-C": ["0xff"],
    "--cpu-mask": ["0xf0"],
    "-Cr": ["0-3"],
    "--cpu-range": ["4-7"],
    "--cpu-strict": ["1"],
    "-Cb": ["0x3"],
    "--cpu-mask-batch": ["0xc"],
    "-Crb": ["0-1"],
    "--cpu-range-batch": ["2-3"],
    "--cpu-strict-batch": ["0"],
    "--prio-batch": ["2"],
    "--poll-batch": ["1"],
    "-np": ["1", "2", "4", "-1"],
    "--parallel": ["2", "auto"],
    "-ngl": _LAYER_VALUES,
    "--n-gpu-layers": _LAYER_VALUES,
    "--gpu-layers": _LAYER_VALUES,
    "-fit": ["on", "off", "0"],
    "--fit": ["off", "on"],
    "-fitt": ["1024", "2048,4096"],
    "--fit-target": ["512"],
    "-ts": ["1,1", "3,1"],
    "--tensor-split": ["60,40"],
    "-ot": _OT_VALUES,
    "--override-tensor": _OT_VALUES,
    "--cpu-moe": [],
    "-cmoe": [],
    "-ncmoe": ["0", "20", " 0 ", ""],
    "--n-cpu-moe": ["0", "12"],
    "-ncffn": ["0", "4"],
    "--n-cpu-ffn": ["3"],
    "-sm": ["layer", "row", "tensor", "none", "ROW"],
    "--split-mode": ["tensor", "layer"],
    "-dev": ["CUDA0", "CUDA0,CUDA1", "CUDA1,CUDA0", "Vulkan0", "none", "cuda0, cuda1", "CUDA9"],
    "--device": ["CUDA0,CUDA1,CUDA2"],
    "-kvo": [],
    "--kv-offload": [],
    "-nkvo": [],
    "--no-kv-offload": [],
    "-ctk": _KV_VALUES,
    "--cache-type-k": _KV_VALUES,
    "-ctv": _KV_VALUES,
    "--cache-type-v": _KV_VALUES,
    "-ub": ["512", "2048", "0", "-1"],
    "--ubatch-size": ["4096"],
    "-b": ["4096"],
    "--mlock": [],
    "--no-mmap": [],
    "--mmap": [],
    "--load-mode": ["mmap", "none", "mlock", "mmap+mlock", "dio", "auto", "DIO", ""],
    "-lm": ["none", "dio", "mlock"],
    "--context-shift": [],
    "--no-context-shift": [],
    "--cache-reuse": ["0", "256", "-1"],
    "--spec-synth-len": ["3"],
    "-mm": [MMPROJ],
    "--mmproj": [MMPROJ],
    "-mmu": ["https://example.invalid/mmproj.gguf"],
    "--mmproj-url": ["https://example.invalid/mmproj.gguf"],
    "--reasoning-preserve": [],
    "--no-reasoning-preserve": [],
    "--chat-template-kwargs": ['{"preserve_reasoning": true}', '{"enable_thinking": false}'],
    "-cram": ["0", "-1", "16384"],
    "--cache-ram": ["0", "4096"],
    "--slot-save-path": ["/tmp/slots"],
    "--host": ["127.0.0.1", "0.0.0.0", "[::1]", "localhost", "::"],
    "--port": ["8081"],
    "-ctxcp": ["0", "8"],
    "--ctx-checkpoints": ["16"],
    "--swa-checkpoints": ["4"],
    "-cms": ["512"],
    "--checkpoint-min-step": ["0"],
    "--spec-type": ["draft-mtp", "ngram-mod"],
    "--spec_type": ["draft-simple"],
    "-md": [DRAFT],
    "--model-draft": [DRAFT],
    "--spec-draft-model": [DRAFT],
    "-hfd": ["org/repo"],
    "-hfrd": ["org/repo"],
    "--spec-draft-hf": ["org/repo"],
    "--hf-repo-draft": ["org/repo"],
    "--spec-default": [],
    "--spec-ngram-mod-n-match": ["16"],
    "--spec_ngram_mod_n_min": ["32"],
    "--spec-draft-n-max": ["8"],
    "--spec-draft-sampling": ["greedy", "probabilistic"],
    "--spec_draft_p_min": ["0.5"],
    "--mirostat": ["0", "2", " 1 "],
    "--samplers": ["top_k;adaptive-p", "top_k;temperature", "ADAPTIVE_P"],
    "--sampling-seq": ["kta", "kt"],
    "--sampler-seq": ["a"],
    "-fa": ["on", "off", "auto", "0"],
    "--flash-attn": ["off", "on"],
    "-bs": [],
    "--backend-sampling": [],
    "-kvu": [],
    "--kv-unified": [],
    "-no-kvu": [],
    "--no-kv-unified": [],
    "--kv-unified-per-slot": [],
    "--cache-idle-slots": [],
    "--no-cache-idle-slots": [],
    "--rpc": ["10.0.0.2:50052"],
    "--jinja": [],
    "--api-key": ["sk-in-extra"],  # refused by the planner (PlanError): the key would be in argv
    "--api-key-file": ["/etc/keys"],
}
_FLAG_NAMES = sorted(EXTRA_FLAGS)


@st.composite
def _flag_group(draw) -> list[str]:
    flag = draw(st.sampled_from(_FLAG_NAMES))
    value = draw(st.one_of(st.sampled_from(EXTRA_FLAGS[flag] or [""]), JUNK, NUMBERS))
    form = draw(st.sampled_from(["alone", "value", "value", "equals", "value-is-flag"]))
    if form == "alone":
        return [flag]
    if form == "equals":
        return [f"{flag}={value}"]
    if form == "value-is-flag":
        return [flag, draw(st.sampled_from(_FLAG_NAMES))]
    return [flag, value]


EXTRA_TOKENS = st.lists(
    st.one_of(_flag_group(), _flag_group(), st.lists(st.one_of(JUNK, st.just("")), min_size=1, max_size=2)),
    max_size=8,
).map(lambda groups: [tok for group in groups for tok in group])

# Raw EXTRA_ARGS text: flags, values, blanks and quote characters glued at random.
_RAW_PIECES = st.one_of(
    st.sampled_from(_FLAG_NAMES),
    st.sampled_from([" ", " ", "\t", "\n", "\r", '"', "'", "=", '""', "''", "a b", "exps=CPU", "CUDA0,CUDA1"]),
    NUMBERS,
    JUNK,
)
EXTRA_TEXT = st.one_of(
    EXTRA_TOKENS.map(join_args),
    EXTRA_TOKENS.map(join_args),
    st.lists(_RAW_PIECES, max_size=12).map("".join),
)

# ---------------------------------------------------------------- preset keys (spec section 3)

_TRUTHY = ["on", "1", "true", "yes", "oui", "off", "0", "no", "false", ""]
KEY_VALUES: dict[str, st.SearchStrategy[str]] = {
    "MODEL": values(["model.gguf", MODEL, "", "model.bin", '"model.gguf"']),
    "BIN": values([BIN, "llama-server", ""]),
    "CTX": values(["32768", "4096", "0", "131072", "1000000000", "1500000000", "-1", "auto"], numeric=True),
    "THREADS": values(["", "0", "4", "16", "-1", "auto"], numeric=True),
    "THREADS_BATCH": values(["", "0", "8", "-3"], numeric=True),
    "BATCH": values(["2048", "4096", "512"], numeric=True),
    "UBATCH": values(["512", "2048", "256", "4096"], numeric=True),
    "HOST": values(["0.0.0.0", "127.0.0.1", "::1", "[::1]", "localhost", "::", "192.168.1.10"]),
    "PORT": values(["8080", "8081", "0", "65535", "65536"], numeric=True),
    "PARALLEL": values(["", "1", "2", "4", "auto", "-1"], numeric=True),
    "NGL": values(["", "auto", "999", "all", "28", "0", "-1", "99"], numeric=True),
    "KV_TYPE": values(_KV_VALUES),
    "KV_TYPE_K": values(_KV_VALUES),
    "KV_TYPE_V": values(_KV_VALUES),
    "MMPROJ": values(["", "mmproj.gguf", MMPROJ]),
    "REASONING": values(["on", "off", "none", "false", "0", "no", "disable", "disabled", "auto", "high"]),
    "REASONING_BUDGET": values(["-1", "0", "1024", "8192"], numeric=True),
    "REASONING_PRESERVE": values(["on", "off"]),
    "CHAT_TEMPLATE": values(["", "gemma", "chatml", "llama3", "Gemma", "gemma9", "/etc/llama/t.jinja", "t.jinja"]),
    "API_KEY": api_keys(),
    "EXTRA_ARGS": EXTRA_TEXT,
    "CUDA_VISIBLE_DEVICES": values(["0", "0,1", "1,0", "", "all", "GPU-8a7c"]),
    "CUDA_LAUNCH_QUEUES": values(["off", "auto", "0.25x", "0.5x", "2x", "4x", "1x", "8x"]),
    "CUDA_GRAPH_OPT": values(["on", "off"]),
    "OP_OFFLOAD_MIN_BATCH": values(["1", "32", "128", "1048576", "1048577", "0"], numeric=True),
    "FIT_TARGET": values(
        ["1024", "512", "2048,4096", "1024/3072", "1,2,3,4,5,6,7,8", "1,2,3,4,5,6,7,8,9", "9999999", "10000000",
         ",1024", "1024,", "1024,,2048", " 1024 , 2048 ", "1024 2048", "", "0"],
        numeric=True,
    ),
    "CACHE_RAM": values(["", "auto", "-1", "0", "-2", "8192", "16384", "2147483647", "2147483648"], numeric=True),
    "CACHE_ISOLATE": values(["off", "on", ""]),
    "SLOT_PERSIST": values(_TRUTHY),
    "SIDE_SLOT": values(_TRUTHY),
    "CTX_CHECKPOINTS": values(["", "0", "8", "32", "-1", "2147483647", "2147483648"], numeric=True),
    "CKPT_MIN_STEP": values(["", "0", "1", "2048", "-5", "2147483647", "2147483648"], numeric=True),
    "SPEC": values(["off", "", "non", "no", "0", "auto", "mtp", "ngram", "mtp+ngram", "ngram+mtp", "eagle"]),
    "MODEL_DRAFT": values(["", "draft.gguf", DRAFT, "mtp-head.gguf"]),
    "SPEC_N_MAX": values(["", "1", "3", "64", "65", "0", "-1"], numeric=True),
    "SPEC_SAMPLING": values(["greedy", "probabilistic", "", "random"]),
    "SPLIT_MODE": values(["", "off", "layer", "non", "no", "0", "tensor", "row"]),
    "LOAD_GUARD": values(["off", "0", "false", "non", "no", "on", ""]),
    "EXTERNAL": values(["", "0", "1", " 1 "]),
    "ENGINE": values(["", "llama.cpp", "llama-server", "strata", "vllm"]),
}
PRESET_KEYS = tuple(KEY_VALUES)

# Only values the typed reading accepts (docs/planner.md), for worlds meant to reach the rules: with every key
# at random, nearly every world would be refused at its first bad value.
_CLEAN_EXTRA_GROUPS = [
    ["--jinja"], ["-fa", "on"], ["-fa", "auto"], ["-ot", "exps=CPU"], ["--mlock"], ["--no-mmap"],
    ["--load-mode", "none"], ["-ngl", "28"], ["-c", "4096"], ["--cache-reuse", "256"], ["-np", "2"],
    ["-ctk", "q8_0"], ["-ctv", "q4_0"], ["--context-shift"], ["--reasoning-budget", "0"], ["-ncmoe", "10"],
    ["--cpu-moe"], ["-cram", "0"], ["--spec-type", "ngram-mod"], ["-sm", "row"], ["-kvu"], ["--no-kv-unified"],
    ["-Cb", "0x3"], ["--poll-batch", "1"], ["-t", "4"], ["-tb", "2"], ["--temp", "0.7"], ["--alias", "a b"],
    ["--host", "127.0.0.1"], ["--port", "8081"], ["--ctx-checkpoints", "8"], ["--no-context-shift"],
]  # fmt: skip
CLEAN_EXTRA_TEXT = st.lists(st.sampled_from(_CLEAN_EXTRA_GROUPS), max_size=4).map(
    lambda groups: join_args([tok for group in groups for tok in group])
)
CLEAN_VALUES: dict[str, st.SearchStrategy[str]] = {
    **KEY_VALUES,  # keys the spec reads with notes: anything goes
    "MODEL": st.sampled_from(["model.gguf", MODEL]),
    "BIN": st.sampled_from([BIN]),
    "CTX": st.sampled_from(["32768", "4096", "0", "131072", "32k", "8K", "+512", "1000000000"]),
    "BATCH": st.sampled_from(["2048", "4096", "512", "2k"]),
    "UBATCH": st.sampled_from(["512", "2048", "256", "4096"]),
    "HOST": st.sampled_from(["0.0.0.0", "127.0.0.1", "::1", "[::1]", "localhost", "::", "192.168.1.10"]),
    "PORT": st.sampled_from(["8080", "8081", "65535", "1"]),
    "PARALLEL": st.sampled_from(["", "1", "2", "4", "auto"]),
    "NGL": st.sampled_from(["", "auto", "999", "all", "28", "0", "99", "ALL"]),
    "KV_TYPE": st.sampled_from(["f16", "bf16", "f32", "q8_0", "q4_0", "Q8_0", ""]),
    "KV_TYPE_K": st.sampled_from(["q8_0", "q5_1", "iq4_nl", ""]),
    "KV_TYPE_V": st.sampled_from(["q8_0", "q4_1", "f16", ""]),
    "MMPROJ": st.sampled_from(["", MMPROJ]),
    "REASONING": st.sampled_from(["on", "off", "none", "false", "0", "no", "disabled", "auto", "yes", ""]),
    "REASONING_BUDGET": st.sampled_from(["-1", "0", "1024", "8192"]),
    "API_KEY": st.sampled_from(["", API_KEY_PREFIX + "clean"]),
    "EXTRA_ARGS": CLEAN_EXTRA_TEXT,
    "CUDA_VISIBLE_DEVICES": st.sampled_from(["0", "0,1", "1,0", "", "all", "GPU-8a7c"]),
    "CACHE_ISOLATE": st.sampled_from(["off", "on", ""]),
    "SLOT_PERSIST": st.sampled_from(_TRUTHY),
    "SIDE_SLOT": st.sampled_from(_TRUTHY),
    "LOAD_GUARD": st.sampled_from(["off", "0", "false", "non", "no", "on", ""]),
    "EXTERNAL": st.sampled_from(["", "0"]),
    "ENGINE": st.sampled_from(["", "llama.cpp", "llama-server", "vllm"]),
}

# ---------------------------------------------------------------- help texts (spec section 5.1)


class HelpText(str):
    """A help text that prints as a short label in failure reports (the real one is 59 kB)."""

    label = ""

    def __new__(cls, text: str, label: str) -> HelpText:
        obj = super().__new__(cls, text)
        obj.label = label
        return obj

    def __repr__(self) -> str:
        return f"<help {self.label}: {len(self)} chars>"

    def _repr_pretty_(self, printer, cycle) -> None:
        printer.text(repr(self))


# One line per capability of spec 5.1, in llama.cpp's layout. Each line carries
# its marker and nothing that would switch on another capability.
HELP_MARKERS: dict[str, str] = {
    "reasoning": "--reasoning [on|off|auto]               use reasoning",
    "load-mode": "-lm,   --load-mode MODE                 how to load: auto, mmap, mmap+mlock, mlock, none, dio",
    "ngl-auto": "-ngl,  --gpu-layers, --n-gpu-layers N   layers in VRAM, a number, 'auto', or 'all'",
    "ngl-plain": "-ngl,  --gpu-layers, --n-gpu-layers N   number of layers to store in VRAM",
    "fit": "-fit,  --fit [on|off]                   whether to adjust unset arguments to fit in device memory",
    "fit-target": "-fitt, --fit-target MiB0,MiB1,...       target margin per device",
    "cache-ram": "--cache-ram, -cram N                    set the maximum cache size in MiB",
    "slot-save-path": "--slot-save-path PATH                   path to save slot kv cache",
    "ctx-checkpoints": "-ctxcp, --ctx-checkpoints, --swa-checkpoints N",
    "checkpoint-min-step": "--checkpoint-min-step N                 minimum spacing between checkpoints",
    "reasoning-preserve": "--reasoning-preserve, --no-reasoning-preserve",
    "no-kv-unified": "-kvu,  --kv-unified, -no-kvu, --no-kv-unified",
    "tensor-split": "-sm,   --split-mode {none,layer,row,tensor}",
    "draft-mtp": "                                        draft-mtp: multi-token prediction head",
    "spec-type": "--spec-type [none|ngram-mod|draft-simple|draft-mtp]",
    "draft-simple": "                                        draft-simple: a small draft model",
    "spec-n-max": "--spec-draft-n-max N                    number of tokens to draft",
    "spec-sampling": "--spec-draft-sampling {greedy}",
    "probabilistic": "                                        probabilistic: accept by probability",
    "ngram-mod": "--spec-ngram-mod-n-match N",
    "no-context-shift": "--no-context-shift                      disables context shift",
    "context-shift": "--context-shift                         enables context shift",
    "api-key-file": "--api-key-file FNAME                    path to file containing API keys",
}
# Substrings whose lines are removed from the real help to take a capability away.
REMOVABLE = [
    "--reasoning ", "--load-mode", "'auto'", "--fit", "--fit-target", "--cache-ram", "--slot-save-path",
    "--ctx-checkpoints", "--checkpoint-min-step", "reasoning-preserve", "--no-kv-unified", "{none,layer,row,tensor}",
    "draft-mtp", "--spec-type", "draft-simple", "--spec-draft-n-max", "--spec-draft-sampling", "probabilistic",
    "--spec-ngram-mod", "context-shift", "--api-key-file", "-ngl", "--n-gpu-layers",
]  # fmt: skip


def _fabricated(names: list[str], base: str = "", label: str = "") -> HelpText:
    text = base + "----- server params -----\n" + "\n".join(HELP_MARKERS[n] for n in names) + "\n"
    return HelpText(text, f"{label}markers {names}")


def _without(text: str, markers: list[str], label: str) -> HelpText:
    kept = "\n".join(line for line in text.splitlines() if not any(m in line for m in markers)) + "\n"
    return HelpText(kept, f"{label} without lines holding {markers}")


_MARKER_SUBSETS = st.lists(st.sampled_from(sorted(HELP_MARKERS)), unique=True).flatmap(st.permutations)
_REMOVALS = st.lists(st.sampled_from(REMOVABLE), min_size=1, unique=True)
HELP_TEXTS = st.one_of(
    st.just(HelpText("", "empty")),
    st.just(HelpText(REAL_HELP, "real 11434")),
    st.just(HelpText(REAL_HELP, "real 11434")),
    st.sampled_from(
        [
            HelpText(NEW_ENGINE, "helptexts.NEW_ENGINE"),
            HelpText(OLD_ENGINE, "helptexts.OLD_ENGINE"),
            HelpText("usage: llama-server [options]\n", "usage line only"),
            HelpText("  \n", "blank"),
        ]
    ),
    _MARKER_SUBSETS.map(_fabricated),
    _MARKER_SUBSETS.map(lambda names: _fabricated(names, REAL_HELP, "real 11434 + ")),
    _REMOVALS.map(lambda ms: _without(REAL_HELP, ms, "real 11434")),
    _REMOVALS.map(lambda ms: _without(NEW_ENGINE, ms, "helptexts.NEW_ENGINE")),
)

# ---------------------------------------------------------------- service environment (spec section 4.8)

ARG_ENV_VALUES: dict[str, list[str]] = {
    "LLAMA_ARG_DEVICE": ["CUDA0", "CUDA0,CUDA1", "Vulkan0", "none"],
    "LLAMA_ARG_SPLIT_MODE": ["layer", "row", "tensor"],
    "LLAMA_ARG_N_GPU_LAYERS": ["auto", "all", "999", "20", "-1"],
    "LLAMA_ARG_OVERRIDE_TENSOR": _OT_VALUES,
    "LLAMA_ARG_CPU_MOE": ["1", "on", "0", "true", "ON"],
    "LLAMA_ARG_N_CPU_MOE": ["0", "30", " 0 "],
    "LLAMA_ARG_N_CPU_FFN": ["0", "2"],
    "LLAMA_ARG_KV_OFFLOAD": ["off", "0", "on", "FALSE"],
    "LLAMA_ARG_NO_KV_OFFLOAD": ["1", "0", ""],
    "LLAMA_ARG_FIT": ["on", "off", "0"],
    "LLAMA_ARG_FIT_TARGET": ["2048"],
    "LLAMA_ARG_TENSOR_SPLIT": ["1,1"],
    "LLAMA_ARG_LOAD_MODE": ["mmap", "none", "mlock", "dio", "mmap+mlock"],
    "LLAMA_ARG_MLOCK": ["1", "on", "0"],
    "LLAMA_ARG_NO_MMAP": ["1", "true", "0"],
    "LLAMA_ARG_RPC": ["10.0.0.2:50052", " "],
    "LLAMA_ARG_CACHE_TYPE_K": _KV_VALUES,
    "LLAMA_ARG_CACHE_TYPE_V": _KV_VALUES,
    "LLAMA_ARG_CONTEXT_SHIFT": ["1", "on", "0"],
    "LLAMA_ARG_NO_CONTEXT_SHIFT": ["1", "0"],
    "LLAMA_ARG_CACHE_REUSE": ["0", "256"],
    "LLAMA_ARG_MMPROJ": [MMPROJ],
    "LLAMA_ARG_MMPROJ_URL": ["https://example.invalid/p.gguf"],
    "LLAMA_ARG_SPEC_SYNTH_LEN": ["3"],
    "LLAMA_ARG_CACHE_RAM": ["0", "-1", "4096"],
    "LLAMA_ARG_CTX_CHECKPOINTS": ["0", "8", "-1", "x"],
    "LLAMA_ARG_CHECKPOINT_MIN_SPACING_NT": ["512"],
    "LLAMA_ARG_REASONING_PRESERVE": ["1"],
    "LLAMA_ARG_CHAT_TEMPLATE_KWARGS": ['{"preserve_reasoning":false}', "{}"],
    "LLAMA_ARG_N_PARALLEL": ["2"],
    "LLAMA_ARG_KV_UNIFIED": ["1"],
    "LLAMA_ARG_KV_UNIFIED_PER_SLOT": ["1"],
    "LLAMA_ARG_CACHE_IDLE_SLOTS": ["1"],
    "LLAMA_ARG_CTX_SIZE": ["8192"],
    "LLAMA_ARG_FLASH_ATTN": ["off", "on", "auto"],
    "LLAMA_ARG_BACKEND_SAMPLING": ["1", "0"],
    "LLAMA_ARG_SPEC_TYPE": ["draft-mtp"],
    "LLAMA_ARG_SPEC_DRAFT_MODEL": [DRAFT],
    "LLAMA_ARG_SPEC_DRAFT_HF_REPO": ["org/repo"],
    "LLAMA_ARG_SPEC_DRAFT_N_MAX": ["4"],
    "LLAMA_ARG_SPEC_DRAFT_SAMPLING": ["greedy"],
    "LLAMA_ARG_SLOT_SAVE_PATH": ["/tmp/s"],
    "LLAMA_ARG_THREADS": ["8"],
}
USER_ENV_VALUES: dict[str, list[str]] = {
    "GGML_CUDA_GRAPH_OPT": ["0", "1", ""],
    "GGML_OP_OFFLOAD_MIN_BATCH": ["0", "64", "128", "junk", " 16 "],
    "GGML_CUDA_ALLREDUCE": ["nccl", "internal", "NCCL", ""],
}


def _env(table: dict[str, list[str]], max_size: int) -> st.SearchStrategy[dict[str, str]]:
    return st.lists(st.sampled_from(sorted(table)), unique=True, max_size=max_size).flatmap(
        lambda keys: st.fixed_dictionaries({k: st.one_of(st.sampled_from(table[k]), JUNK) for k in keys})
    )


ARG_ENVS = _env(ARG_ENV_VALUES, 5)
USER_ENVS = _env(USER_ENV_VALUES, 3)

# ---------------------------------------------------------------- HostFacts

ARCHS = [
    "llama", "qwen3", "qwen35", "qwen35moe", "qwen3next", "qwen4exp", "glm4moe", "gemma3", "deepseek2", "mamba2",
    "jamba", "eagle3", "dflash", "", "LLAMA", "Qwen4Exp", "nemotron_h",
]  # fmt: skip
# What gguf_meta produces: integers clamped to [0, 2^31-1].
GGUF_INTS = st.one_of(st.integers(0, 130), st.sampled_from([0, 0, 1, 2, 4096, INT32_MAX]), st.integers(0, INT32_MAX))
MIB = st.one_of(
    st.just(0),
    st.integers(1, 1 << 21),
    st.sampled_from([1, 1023, 1024, 8192, 24576, 81920, INT32_MAX, 2**31, 2**40, 2**62]),
    st.integers(0, 2**48),
)
BYTES = st.one_of(
    st.just(0),
    st.integers(1, 1 << 42),
    st.sampled_from([1, 2**20, 2**30, 2**31, 2**40, 2**62, 2**63 - 1]),
)

GGUF_INFOS = st.builds(
    GGUFInfo,
    version=st.integers(1, 3),
    arch=st.one_of(st.sampled_from(ARCHS), st.text(max_size=8)),
    block_count=GGUF_INTS,
    nextn=GGUF_INTS,
    context_length=GGUF_INTS,
    expert_count=GGUF_INTS,
    key_len=GGUF_INTS,
    val_len=GGUF_INTS,
    full_attn_interval=GGUF_INTS,
    embedding_length=GGUF_INTS,
    head_count=GGUF_INTS,
    head_count_kv=GGUF_INTS,
    head_count_kv_layers=st.lists(st.one_of(st.integers(0, 16), st.just(INT32_MAX)), max_size=70).map(tuple),
    ssm_conv=GGUF_INTS,
    ssm_inner=GGUF_INTS,
    ssm_state=GGUF_INTS,
    ssm_groups=GGUF_INTS,
    hybrid=st.booleans(),
    has_nextn_tensor=st.booleans(),
    tensor_count=GGUF_INTS,
)
SPLIT_IDS = ["CUDA0", "CUDA1", "CUDA2", "cuda3", "Vulkan0", "Metal0", "CUDA", ""]
SPLIT_DEVS = st.lists(
    st.builds(SplitDev, id=st.one_of(st.sampled_from(SPLIT_IDS), st.text(max_size=6)), total_mib=MIB), max_size=4
).map(tuple)

FACT_FIELDS: dict[str, st.SearchStrategy] = {
    "help": HELP_TEXTS,
    "bin": st.sampled_from([BIN, BIN, ""]),
    "model": st.sampled_from([MODEL, MODEL, ""]),
    "mmproj": st.sampled_from(["", MMPROJ]),
    "api_key_file": st.sampled_from(["", KEY_FILE]),
    "cpu": st.one_of(
        st.none(), st.builds(CpuBudget, n=st.integers(0, 4096), engine=st.integers(0, 4096), why=st.text(max_size=20))
    ),
    "launch_queues": st.sampled_from(["", "", "4x", "1x", "junk"]),
    "gpus": st.integers(0, 16),
    "arg_env": ARG_ENVS,
    "user_env": USER_ENVS,
    "gguf": st.one_of(st.none(), GGUF_INFOS),
    "model_bytes": BYTES,
    "ram_mib": MIB,
    "ram_avail_mib": MIB,
    "vram_mib": MIB,
    "unified_mem": st.booleans(),
    "engine_vram_mib": MIB,
    "slot_dir": st.sampled_from(["", SLOT_DIR]),
    "engine_build": st.one_of(
        st.sampled_from([0, 1, 4589, 5000, 10863, 10864, 11008, 11009, 11434, INT32_MAX]), st.integers(0, INT32_MAX)
    ),
    "draft": st.sampled_from(["", DRAFT, "/srv/models/"]),
    "draft_err": st.sampled_from(["", "no such file or directory"]),
    "draft_gguf": st.one_of(st.none(), GGUF_INFOS),
    "draft_is_model": st.booleans(),
    "spec_auto_blocked": st.sampled_from(["", "the last launch with this configuration never answered"]),
    "split_devs": SPLIT_DEVS,
    "mmproj_bytes": BYTES,
}

# ---------------------------------------------------------------- coherent templates

_DENSE = GGUFInfo(
    version=3, arch="llama", block_count=32, context_length=131072, key_len=128, val_len=128, embedding_length=4096,
    head_count=32, head_count_kv=8, tensor_count=291,
)  # fmt: skip
_HYBRID = GGUFInfo(
    version=3, arch="qwen3next", block_count=48, context_length=262144, expert_count=512, key_len=256, val_len=256,
    full_attn_interval=4, embedding_length=2048, head_count=16, head_count_kv=2, ssm_conv=4, ssm_inner=4096,
    ssm_state=128, ssm_groups=16, hybrid=True, tensor_count=843,
)  # fmt: skip
_MTP = GGUFInfo(
    version=3, arch="glm4moe", block_count=47, nextn=1, context_length=131072, expert_count=128, key_len=128,
    val_len=128, embedding_length=4096, head_count=96, head_count_kv=8, has_nextn_tensor=True, tensor_count=1000,
)  # fmt: skip
_GIB = 1 << 30
_REAL = HelpText(REAL_HELP, "real 11434")
_NEW = HelpText(NEW_ENGINE, "helptexts.NEW_ENGINE")
_OLD = HelpText(OLD_ENGINE, "helptexts.OLD_ENGINE")
_TWO_CARDS = (SplitDev("CUDA0", 24576), SplitDev("CUDA1", 16384))

TEMPLATES: list[tuple[dict[str, str], dict[str, object]]] = [
    (  # two cards, tensor split accepted
        {"CTX": "32768", "SPLIT_MODE": "tensor", "NGL": "all", "HOST": "127.0.0.1"},
        {"help": _REAL, "gguf": _DENSE, "model_bytes": 8 * _GIB, "vram_mib": 40960, "ram_mib": 131072,
         "ram_avail_mib": 120000, "gpus": 2, "split_devs": _TWO_CARDS, "engine_build": 11434, "slot_dir": SLOT_DIR},
    ),
    (  # one big card: side slot, cache sizing, slot persistence, queues, graph opt, fit target
        {"CTX": "65536", "SIDE_SLOT": "on", "SLOT_PERSIST": "on", "HOST": "127.0.0.1", "CUDA_GRAPH_OPT": "on",
         "FIT_TARGET": "1024,2048", "OP_OFFLOAD_MIN_BATCH": "128", "CUDA_LAUNCH_QUEUES": "auto",
         "REASONING_PRESERVE": "off", "REASONING": "on"},
        {"help": _REAL, "gguf": _DENSE, "model_bytes": 4 * _GIB, "vram_mib": 81920, "ram_mib": 262144,
         "ram_avail_mib": 250000, "gpus": 2, "engine_build": 11434, "slot_dir": SLOT_DIR},
    ),
    (  # hybrid model on an old engine: checkpoint rules
        {"CTX": "131072", "SPEC": "mtp+ngram", "PARALLEL": "2"},
        {"help": _NEW, "gguf": _HYBRID, "model_bytes": 40 * _GIB, "vram_mib": 24576, "ram_mib": 65536,
         "ram_avail_mib": 60000, "gpus": 1, "engine_build": 10500, "slot_dir": SLOT_DIR},
    ),
    (  # MTP head, speculative decoding
        {"CTX": "32768", "SPEC": "auto", "SPEC_N_MAX": "4", "SPEC_SAMPLING": "probabilistic"},
        {"help": _REAL, "gguf": _MTP, "model_bytes": 60 * _GIB, "vram_mib": 196608, "ram_mib": 524288,
         "ram_avail_mib": 500000, "gpus": 4, "engine_build": 11434},
    ),
    (  # draft model
        {"CTX": "16384", "SPEC": "mtp", "MODEL_DRAFT": "draft.gguf"},
        {"help": _REAL, "gguf": _DENSE, "draft": DRAFT, "draft_gguf": _DENSE, "model_bytes": 8 * _GIB,
         "vram_mib": 24576, "ram_mib": 65536, "ram_avail_mib": 50000, "gpus": 1, "engine_build": 11434},
    ),
    (  # MoE larger than VRAM, resident load mode: load guard and MoE advice
        {"CTX": "32768", "EXTRA_ARGS": "--mlock --no-mmap"},
        {"help": _REAL, "gguf": _MTP, "model_bytes": 200 * _GIB, "vram_mib": 24576, "ram_mib": 131072,
         "ram_avail_mib": 100000, "gpus": 1},
    ),
    (  # old engine, nothing known
        {"EXTRA_ARGS": "--load-mode mlock -Cb 0x3"},
        {"help": _OLD},
    ),
    ({}, {}),  # an empty world: every fact unknown
]


@st.composite
def worlds(draw, with_api_key: bool = False) -> tuple[dict[str, str], HostFacts]:
    """(preset, facts): a template perturbed by random preset keys and random facts.

    Half the worlds are hostile (any value of any key, junk included), half clean (values the typed reading
    accepts, EXTRA_ARGS made of flags the real engine knows), so that both the refusals and the rules behind
    them are reached.
    """
    base_preset, base_facts = draw(st.sampled_from(TEMPLATES))
    preset = dict(base_preset)
    clean = draw(st.booleans())
    table = CLEAN_VALUES if clean else KEY_VALUES
    for key in draw(st.lists(st.sampled_from(PRESET_KEYS), unique=True, max_size=len(PRESET_KEYS))):
        preset[key] = draw(table[key])
    if with_api_key:
        preset["API_KEY"] = draw(api_keys())
    # Rare: the documented PlanError cases; common: bin and model known.
    facts_kwargs: dict[str, object] = {"bin": BIN, "model": MODEL}
    facts_kwargs.update(base_facts)
    fields = sorted(f for f in FACT_FIELDS if not (clean and f == "help"))
    for name in draw(st.lists(st.sampled_from(fields), unique=True, max_size=len(fields))):
        facts_kwargs[name] = draw(FACT_FIELDS[name])
    if clean and not facts_kwargs.get("help"):
        facts_kwargs["help"] = _REAL
    return preset, HostFacts(**facts_kwargs)


# YAML-side values (normalize_preset): what a YAML 1.1 parser hands over.
YAML_VALUES = st.one_of(
    st.text(max_size=8),
    st.booleans(),
    st.none(),
    st.integers(-(2**40), 2**40),
    st.floats(allow_nan=True, allow_infinity=True),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)
YAML_KEYS = st.one_of(st.sampled_from(PRESET_KEYS), st.sampled_from([k.lower() for k in PRESET_KEYS]), st.text())
