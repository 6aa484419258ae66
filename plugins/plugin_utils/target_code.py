# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""This collection's target code (its module_utils) as one archive, named by a digest of its sources.

The host action keeps it in each host's planning venv and runs the host judge from there (see
``_converge/judge_entry.py`` for why). The digest changes with any source, so a host never runs another version's
code: a new version is installed beside it, and the old one removed.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import io
import os
import zipfile

PACKAGE = "ansible_collections.llamafleet.llamacpp.plugins.module_utils"
# Every file's date in the archive: the same sources make the same bytes.
_EPOCH = (2020, 1, 1, 0, 0, 0)


@functools.cache
def sources() -> tuple[tuple[str, bytes], ...]:
    """(path inside the archive, content) of every Python source of module_utils, in order."""
    root = importlib.import_module(PACKAGE).__path__[0]
    found = []
    for directory, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(directory, name)
                relative = os.path.relpath(path, root).replace(os.sep, "/")
                with open(path, "rb") as handle:
                    found.append((f"{PACKAGE.replace('.', '/')}/{relative}", handle.read()))
    return tuple(found)


@functools.cache
def digest() -> str:
    hashed = hashlib.sha256()
    for path, content in sources():
        hashed.update(path.encode() + b"\0" + hashlib.sha256(content).digest())
    return hashed.hexdigest()[:16]


@functools.cache
def archive() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as bundle:
        for path, content in sources():
            info = zipfile.ZipInfo(path, _EPOCH)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            bundle.writestr(info, content)
    return buffer.getvalue()


# Run on the target by the venv's Python (-I: no user site, no PYTHON* variables). argv: the code's directory,
# then the judge's options file (or none: stdin). Exit 75 (EX_TEMPFAIL) when that version is not there yet.
RUN = """import os, sys
code = sys.argv[1]
if not os.path.isfile(os.path.join(code, ".complete")):
    sys.exit(75)
sys.path.insert(0, code)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._converge.judge_entry import main
sys.exit(main(sys.argv[2:]))
"""
MISSING = 75

# argv: the code's directory, the archive. Unpacked and compiled beside it, then renamed into place (a reader sees
# the whole version or none); every other version is removed.
INSTALL = """import compileall, os, shutil, sys, tempfile, zipfile
code, bundle = sys.argv[1:3]
parent = os.path.dirname(code)
os.makedirs(parent, mode=0o755, exist_ok=True)
partial = tempfile.mkdtemp(prefix=".partial-", dir=parent)
zipfile.ZipFile(bundle).extractall(partial)
if not compileall.compile_dir(partial, quiet=1):
    shutil.rmtree(partial)
    sys.exit("the collection's code did not compile under this Python")
open(os.path.join(partial, ".complete"), "w").close()
os.chmod(partial, 0o755)
try:
    os.rename(partial, code)
except OSError:
    shutil.rmtree(partial)  # installed meanwhile by another run
for entry in os.listdir(parent):
    if os.path.join(parent, entry) != code and not entry.startswith(".partial-"):
        shutil.rmtree(os.path.join(parent, entry), ignore_errors=True)
"""


def code_dir(venv: str) -> str:
    return f"{venv.rstrip('/')}/llamafleet-code/{digest()}"
