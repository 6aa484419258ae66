"""The planner package is pure: it reads no file, runs no process, reads no environment.

Two independent checks: plans are computed under an audit hook that fails any
file, process, socket or directory operation and with os.environ / os.getenv
replaced by objects that fail on access; and the source of every pure module
is scanned for I/O modules and calls.
"""

import ast
import contextlib
import dataclasses
import os
import pathlib
import sys
from collections.abc import Mapping

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils import planner
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.facts import (
    CpuBudget,
    GGUFInfo,
    HostFacts,
    SplitDev,
)
from tests.unit.support.helptexts import NEW_ENGINE, OLD_ENGINE

MODULE_DIR = pathlib.Path(planner.__file__).resolve().parent
# The layout is the rule: everything under the pure packages below is pure, and so is the planner façade; the I/O
# lives in _probes/ (readings) and _converge/ (the apply step and the host judge). The public façades are the only
# files at the top.
PURE_PACKAGES = ("_planner", "_render", "_judgements", "_layout", "_inputs", "_gateway", "_placement", "_readings")
IO_PACKAGES = ("_probes", "_converge")
FACADES = {"planner.py", "gguf_meta.py", "fleet_placement.py"}
PURE_MODULES = sorted(
    [f"{pkg}/{p.name}" for pkg in PURE_PACKAGES for p in (MODULE_DIR / pkg).glob("*.py")]
    + ["planner.py", "fleet_placement.py"]
)

_BLOCKED_EVENTS = (
    "open", "os.listdir", "os.scandir", "os.chdir", "os.mkdir", "os.remove", "os.rename", "os.rmdir",
    "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.putenv", "os.unsetenv", "os.truncate",
    "os.chmod", "os.chown", "os.link", "os.symlink", "subprocess.Popen", "socket.connect", "socket.bind",
    "socket.getaddrinfo", "socket.gethostbyname", "shutil.copyfile", "shutil.rmtree", "ctypes.dlopen",
    "glob.glob", "pathlib.Path.glob",
)
_armed = {"on": False, "seen": []}


def _audit(event, args):
    if _armed["on"] and event.startswith(_BLOCKED_EVENTS):
        _armed["seen"].append(event)
        raise RuntimeError(f"planner performed I/O: {event} {args!r:.200}")


sys.addaudithook(_audit)  # cannot be removed; inert unless armed


class _NoEnviron(Mapping):
    def _fail(self, *_a, **_k):
        raise RuntimeError("planner read the process environment")

    __getitem__ = __iter__ = __len__ = __contains__ = get = keys = items = values = _fail


@contextlib.contextmanager
def no_io():
    """Fail any I/O or environment read inside the block; restore everything after."""
    saved_environ, saved_getenv = os.environ, os.getenv
    os.environ, os.getenv = _NoEnviron(), _NoEnviron()._fail
    _armed["on"], _armed["seen"] = True, []
    try:
        yield _armed["seen"]
    finally:
        _armed["on"] = False
        os.environ, os.getenv = saved_environ, saved_getenv


DENSE = GGUFInfo(arch="llama", block_count=32, context_length=131072, key_len=128, val_len=128, head_count=32,
                 head_count_kv=8, embedding_length=4096, tensor_count=291)
HYBRID = GGUFInfo(arch="qwen3next", block_count=48, context_length=262144, key_len=256, val_len=256,
                  head_count_kv=2, full_attn_interval=4, hybrid=True, ssm_conv=4, ssm_inner=4096, ssm_state=128,
                  ssm_groups=16, expert_count=512, nextn=1, has_nextn_tensor=True)

RICH_FACTS = HostFacts(
    help=NEW_ENGINE, bin="/opt/bin/llama-server", model="/m/a.gguf", mmproj="", api_key_file="/run/k",
    cpu=CpuBudget(4, 16, "cgroup quota of 4 CPU"), gpus=2, arg_env={"LLAMA_ARG_CACHE_TYPE_K": "q8_0"},
    user_env={}, gguf=HYBRID, model_bytes=45 << 30, ram_mib=65536, ram_avail_mib=50000, vram_mib=49152,
    slot_dir="/var/lib/s", engine_build=10500, draft="/m/d.gguf", draft_gguf=DENSE,
    split_devs=(SplitDev("CUDA0", 24576), SplitDev("CUDA1", 24576)),
)

PRESETS = [
    {},
    {"NGL": "999", "SIDE_SLOT": "on", "CACHE_RAM": "auto", "SPEC": "auto", "REASONING": "off",
     "REASONING_PRESERVE": "on", "FIT_TARGET": "1024,2048", "CUDA_GRAPH_OPT": "on", "OP_OFFLOAD_MIN_BATCH": "64",
     "CUDA_LAUNCH_QUEUES": "auto", "THREADS_BATCH": "8", "SLOT_PERSIST": "on", "CTX_CHECKPOINTS": "16"},
    {"SPEC": "mtp+ngram", "MODEL_DRAFT": "d.gguf", "SPEC_N_MAX": "8", "SPEC_SAMPLING": "probabilistic",
     "EXTRA_ARGS": "--mlock --no-mmap -ot exps=CPU --cache-reuse 256 --context-shift"},
    {"SPLIT_MODE": "tensor", "CTX": "8192", "KV_TYPE": "bf16", "CUDA_VISIBLE_DEVICES": "0,1"},
    {"SPEC": "ngram", "EXTRA_ARGS": "-ncmoe 10 --load-mode dio -Cb 0xff", "CKPT_MIN_STEP": "4096",
     "LOAD_GUARD": "off", "KV_TYPE_K": "q4_0"},
    {"EXTERNAL": "1"},
]


@pytest.mark.parametrize("preset", PRESETS, ids=lambda p: ",".join(sorted(p)) or "empty")
@pytest.mark.parametrize("facts", [RICH_FACTS, dataclasses.replace(RICH_FACTS, help=OLD_ENGINE, gguf=DENSE),
                                   HostFacts(bin="/b", model="/m.gguf")], ids=["rich", "old", "unknown"])
def test_plan_performs_no_io(preset, facts):
    with no_io() as seen:
        try:
            result = planner.plan(preset, facts)
        except planner.PlanError as err:  # a refusal (a flag this engine lacks) is reached without I/O too
            result = err
    assert seen == []
    assert isinstance(result, (planner.Plan, planner.PlanError))


def test_the_guard_itself_catches_io(tmp_path):
    """Proof that the check above can fail."""
    target = tmp_path / "x"
    target.write_text("x")
    caught = []
    with no_io():
        for attempt in (target.read_text, lambda: os.environ.get("HOME"), lambda: os.getenv("HOME")):
            try:
                attempt()
            except RuntimeError as err:
                caught.append(str(err))
    assert len(caught) == 3
    assert caught[0].startswith("planner performed I/O: open")


_IO_MODULES = {"os", "io", "subprocess", "socket", "shutil", "pathlib", "glob", "tempfile", "time", "random",
               "urllib", "http", "ctypes", "multiprocessing", "threading", "ansible"}
_IO_CALLS = {"open", "exec", "eval", "compile", "__import__", "input", "print"}
# Submodules of those that only compute (string parsing): allowed by their full name.
_PURE_SUBMODULES = {"urllib.parse"}


def _io_imports(tree: ast.AST) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.split(".")[0] in _IO_MODULES]
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in _IO_MODULES:
            found.append(node.module)
    return [name for name in found if name not in _PURE_SUBMODULES]


@pytest.mark.parametrize(("source", "flagged"), [
    ("from urllib.parse import urlsplit", []),
    ("import urllib.parse", []),
    ("from urllib.request import urlopen", ["urllib.request"]),
    ("import urllib", ["urllib"]),
    ("from os import path", ["os"]),
])
def test_the_io_import_scan_allows_only_pure_submodules(source, flagged):
    assert _io_imports(ast.parse(source)) == flagged


def test_the_pure_layout_is_not_empty():
    """The scan below must have something to scan: the rule areas and the renderers."""
    assert len(PURE_MODULES) > 30
    assert {"_planner/preset_types.py", "_planner/flag_table.py", "_render/compose_service.py"} <= set(PURE_MODULES)


@pytest.mark.parametrize("name", PURE_MODULES)
def test_pure_module_source_has_no_io(name):
    tree = ast.parse((MODULE_DIR / name).read_text(encoding="utf-8"))
    problems = _io_imports(tree)
    problems += [node.func.id + "()" for node in ast.walk(tree)
                 if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _IO_CALLS]
    assert problems == []


def test_only_the_public_facades_are_at_the_top():
    """New code goes into a subpackage by what it does: pure rules, pure rendering, or I/O."""
    top = {p.name for p in MODULE_DIR.glob("*.py") if p.name != "__init__.py"}
    assert top == FACADES
    packages = {p.name for p in MODULE_DIR.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert packages == set(PURE_PACKAGES + IO_PACKAGES)


def _imported_modules(source: pathlib.Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return names


def test_module_utils_import_nothing_from_ansible_core():
    # The ansible-core matrix (make matrix-oldest/-newest) runs every unit test but these module_utils ones:
    # code that imports nothing of ansible-core behaves the same under each release.
    found = {}
    for path in MODULE_DIR.rglob("*.py"):
        names = _imported_modules(path)
        found[path.relative_to(MODULE_DIR).as_posix()] = sorted(
            name for name in names if name == "ansible" or name.startswith("ansible.")
        )
    assert {path: names for path, names in found.items() if names} == {}
    assert len(found) > 40  # the walk saw the package
