"""What the planning runtime costs on a target, with gguf's dependencies and without (the role's pip --no-deps).

Usage: .venv/bin/python bench/target_runtime.py [--python PYTHON] [--runs N]

Side by side, in one run, with the same interpreter (default: this one):
1. Install: two fresh venvs, one with `pip install gguf nvidia-ml-py` (pulls numpy, PyYAML, requests, tqdm, …),
   one with `pip install --no-deps` from the offline wheel directory (scripts/wheels.sh). Time, size on disk and
   the number of installed distributions.
2. Import, in a fresh interpreter each time (median of N): `import gguf` (the package, which loads numpy), against
   what the modules load: the collection's GGUF header reader, which takes gguf's constants table without the
   package's __init__ (plugins/module_utils/_probes/gguf_header.py), and pynvml.
The ratios say what the trimmed install saves; both venvs run the collection's reader the same way.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ["gguf==0.19.0", "nvidia-ml-py==13.615.71"]
# The collection as an importable tree, as conftest.py makes it for the tests.
COLLECTIONS = ROOT / ".collections"

READER = (
    f"import sys; sys.path.insert(0, {str(COLLECTIONS)!r});"
    " from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes import gguf_header;"
    " assert gguf_header.GGUF_IMPORT_ERROR is None, gguf_header.GGUF_IMPORT_ERROR;"
    " import pynvml; assert 'numpy' not in sys.modules"
)
FULL = "import gguf, pynvml, sys; assert 'numpy' in sys.modules"


def du(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink())


def make_venv(python: str, dest: Path, pip_args: list[str]) -> tuple[float, int, int]:
    subprocess.run([python, "-m", "venv", str(dest)], check=True)
    started = time.perf_counter()
    subprocess.run([str(dest / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                    *pip_args], check=True)
    took = time.perf_counter() - started
    listed = subprocess.run([str(dest / "bin" / "python"), "-m", "pip", "list", "--format=freeze",
                             "--disable-pip-version-check"], check=True, capture_output=True, text=True)
    return took, du(dest), len(listed.stdout.split())


def time_import(python: Path, code: str, runs: int) -> float:
    samples = []
    for _run in range(runs):
        started = time.perf_counter()
        subprocess.run([str(python), "-c", code], check=True)
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", default=sys.executable, help="the target interpreter to build venvs with")
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    if not (COLLECTIONS / "ansible_collections").is_dir():
        subprocess.run([sys.executable, "-c", "import conftest"], cwd=ROOT, check=True)
    wheels = subprocess.run([str(ROOT / "scripts" / "wheels.sh")], check=True, capture_output=True,
                            text=True).stdout.strip()

    with tempfile.TemporaryDirectory(prefix="llamafleet-runtime-bench.") as tmp:
        full, trimmed = Path(tmp) / "full", Path(tmp) / "trimmed"
        full_install = make_venv(args.python, full, PACKAGES)
        trimmed_install = make_venv(args.python, trimmed,
                                    ["--no-deps", "--no-index", "--find-links", wheels, *PACKAGES])
        bare = time_import(trimmed / "bin" / "python", "pass", args.runs)
        full_import = time_import(full / "bin" / "python", FULL, args.runs)
        reader_trimmed = time_import(trimmed / "bin" / "python", READER, args.runs)
        reader_full = time_import(full / "bin" / "python", READER, args.runs)

    version = subprocess.run([args.python, "-c", "import sys; print(sys.version.split()[0])"], check=True,
                             capture_output=True, text=True).stdout.strip()
    print(f"target Python {version}; medians of {args.runs} fresh interpreters")
    print("install (fresh venv)         seconds   MiB on disk   distributions")
    print(f"  with dependencies (index)  {full_install[0]:7.2f}   {full_install[1] / 2**20:11.1f}   "
          f"{full_install[2]:13d}")
    print(f"  --no-deps (wheel dir)      {trimmed_install[0]:7.2f}   {trimmed_install[1] / 2**20:11.1f}   "
          f"{trimmed_install[2]:13d}")
    print(f"  ratio with/without         {full_install[0] / trimmed_install[0]:7.2f}   "
          f"{full_install[1] / trimmed_install[1]:11.2f}")
    print("imports (process start included)")
    print(f"  bare interpreter                         {bare:.3f} s")
    print(f"  import gguf (package, numpy)             {full_import:.3f} s  (+{full_import - bare:.3f} s)")
    print(f"  collection reader + pynvml, trimmed venv {reader_trimmed:.3f} s  (+{reader_trimmed - bare:.3f} s)")
    print(f"  collection reader + pynvml, full venv    {reader_full:.3f} s  (+{reader_full - bare:.3f} s)")
    print(f"  ratio import gguf / collection reader    {(full_import - bare) / max(reader_trimmed - bare, 1e-6):.1f}")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PIP_DISABLE_PIP_VERSION_CHECK", "1")
    sys.exit(main())
