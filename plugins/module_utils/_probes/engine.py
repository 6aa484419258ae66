"""Ask the engine binary about itself: ``--help``, ``--version``, ``--list-devices``.

Spec sections 1.1 (steps 5-7), 4.1, 4.2 and 4.10. Parsing is pure and lives in
``parse_*``; the rest runs the binary with an explicit, minimal environment
and a timeout, and degrades to "unknown" ("" / 0 / ()) on any failure.

The help and version texts are cached on disk, keyed by the binary's identity,
so a module run on an unchanged host executes the engine zero times: every
``ansible-playbook`` run would otherwise start the engine twice per instance
(each start maps its libraries and, on GPU builds, initialises CUDA).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.engine_inputs import (
    SYSTEM_CONFIG,
    SYSTEM_CONFIG_DIR,
    is_engine_variable,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.facts import SplitDev
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.files import write_cache_json

# ---------------------------------------------------------------------------
# Environment
# ---------------------------------------------------------------------------

# The module runs inside Ansible's Python, whose environment (PYTHONPATH,
# ANSIBLE_*, a venv's PATH, the connecting user's locale, proxy variables ...)
# says nothing about how the service will run. Probing the engine with it would
# make the plan depend on how Ansible was invoked, and a stray LLAMA_ARG_* or
# GGML_* in the controller's session would change what the engine reports. So
# the engine runs with a fixed base plus only what the *service* environment
# sets and the engine reads.
BASE_ENV: Mapping[str, str] = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C"}


def engine_variables(service_env: Mapping[str, str]) -> dict[str, str]:
    """The service variables that change what the engine does or reports: CUDA_*, GGML_*, LLAMA_ARG_*."""
    return {name: str(value) for name, value in sorted(service_env.items()) if is_engine_variable(name)}


def engine_env(bin_path: str, service_env: Mapping[str, str]) -> dict[str, str]:
    """The environment to run the engine with (probes and service alike).

    Base PATH/LANG, the GPU-selection and engine variables of ``service_env``,
    and LD_LIBRARY_PATH starting with the binary's own directory, where
    llama.cpp release archives put ``libllama.so`` and the ``libggml-*.so``
    backends (spec section 1.1 step 6). The directory is taken from the path as
    given, not its symlink target, like the service's unit will.
    """
    env = dict(BASE_ENV)
    env.update(engine_variables(service_env))
    bin_dir = os.path.dirname(os.path.abspath(bin_path)) if bin_path else ""
    inherited = str(service_env.get("LD_LIBRARY_PATH", "") or "")
    env["LD_LIBRARY_PATH"] = ":".join(p for p in (bin_dir, inherited) if p)
    if not env["LD_LIBRARY_PATH"]:
        del env["LD_LIBRARY_PATH"]
    return env


# ---------------------------------------------------------------------------
# Running the binary
# ---------------------------------------------------------------------------

HELP_TIMEOUT_S = 5.0
VERSION_TIMEOUT_S = 5.0
LIST_DEVICES_TIMEOUT_S = 20.0
_REAP_TIMEOUT_S = 2.0


def run_engine(bin_path: str, args: list[str], env: Mapping[str, str], timeout: float) -> tuple[int | None, str]:
    """Run ``bin_path args`` and return (exit status, stdout and stderr combined).

    The status is None when the binary could not be executed or ran past
    ``timeout``; the whole process group is then killed, so a helper process the
    engine spawned cannot keep running (or keep our pipe open). A negative
    status is a signal, as in :mod:`subprocess`.
    """
    return run_command([bin_path], args, env, timeout)


# Start of the text run_command returns when the command could not be started at all (no timeout).
CANNOT_START = "llamafleet: cannot start "


def run_command(
    prefix: Sequence[str], args: Sequence[str], env: Mapping[str, str], timeout: float
) -> tuple[int | None, str]:
    """``run_engine`` for any command that ends by starting the engine (the binary, or ``docker run IMAGE``).

    A command that cannot be started gives (None, text starting with CANNOT_START); one that runs past
    ``timeout`` gives (None, what it printed so far).
    """
    try:
        # Not AnsibleModule.run_command: it has no timeout, and a wedged engine must be killed with its whole
        # process group (a hung --help would otherwise hang the module until the task's connection gives up).
        proc = subprocess.Popen(  # pylint: disable=ansible-bad-function
            [*prefix, *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=dict(env),
            start_new_session=True,  # own process group, killable as a whole
        )
    except (OSError, ValueError) as err:
        return None, f"{CANNOT_START}{prefix[0] if prefix else '?'}: {err}"
    try:
        out = proc.communicate(timeout=timeout)[0]
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        try:
            out = proc.communicate(timeout=_REAP_TIMEOUT_S)[0]
        except subprocess.TimeoutExpired:  # a grandchild left the group and holds the pipe
            out = b""
        return None, _decode(out)
    return proc.returncode, _decode(out)


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        proc.kill()


def _decode(data: bytes | None) -> str:
    return (data or b"").decode("utf-8", errors="replace")


_LOADER_FAILURE = re.compile(r"error while loading shared libraries|cannot open shared object file")


def _started(rc: int | None, text: str) -> bool:
    """False when the binary never really ran: not executable, killed, or the
    dynamic loader gave up (missing .so: exit 127 with the loader's message)."""
    if rc is None or rc < 0 or rc == 127:
        return False
    if text.startswith(CANNOT_START):
        return False
    return not _LOADER_FAILURE.search(text)


def _help_from(rc: int | None, text: str) -> str:
    # Spec 4.1: keep the text when the status is 0 or anything was printed
    # (some builds exit non-zero on --help) -- but a loader error or a crash is
    # not a help text, a timed-out text is truncated, and a non-zero exit whose
    # output does not list --help is an error message (a bad variable, a bad
    # config.ini), whose flags would be planned against: a deliberate difference.
    if not _started(rc, text):
        return ""
    return text if rc == 0 or "--help" in text else ""


def read_help(bin_path: str, env: Mapping[str, str], timeout: float = HELP_TIMEOUT_S) -> str:
    """``<bin> --help`` (spec section 4.1); "" = unknown engine."""
    rc, text = run_engine(bin_path, ["--help"], env, timeout)
    return _help_from(rc, text)


def read_version(bin_path: str, env: Mapping[str, str], timeout: float = VERSION_TIMEOUT_S) -> str:
    """``<bin> --version`` output (exit status ignored, spec 4.2); "" when it did not run."""
    rc, text = run_engine(bin_path, ["--version"], env, timeout)
    return text if _started(rc, text) else ""


# ---------------------------------------------------------------------------
# Build number (spec 4.2)
# ---------------------------------------------------------------------------

# Loki's two patterns, tried in this order. Three banner generations:
#   version: 0.1.0-dev (build 10450, commit ece963f41)   current
#   version: 10450 (ece963f)                             previous
#   build: 4589 (a1b2c3d)                                oldest
_BUILD_LONG = re.compile(r"build\s+(\d+),\s*commit\s+([0-9a-fA-F]+)")
_BUILD_SHORT = re.compile(r"^\s*(?:version|build)\s*:\s*(\d+)\s*\(([0-9a-fA-F]+)\)", re.MULTILINE)
TRUSTED_BUILD_FLOOR = 5000  # a shallow clone reports "build 1"


def parse_engine_build(text: str) -> int:
    """The build number in a ``--version`` banner; 0 when none is found."""
    for pattern in (_BUILD_LONG, _BUILD_SHORT):
        match = pattern.search(text)
        if match:
            return int(match.group(1))
    return 0


def trusted_build(build: int, official: bool) -> int:
    """The build number the planner may believe: only an official build's, and not a shallow clone's."""
    return build if official and build >= TRUSTED_BUILD_FLOOR else 0


# ---------------------------------------------------------------------------
# Device list (spec 4.10)
# ---------------------------------------------------------------------------

_DEVICE_LINE = re.compile(r"^\s*([A-Za-z]+\d+):\s*(.+?)\s*\((\d+)\s*MiB,\s*(\d+)\s*MiB free\)\s*$", re.MULTILINE)


def parse_list_devices(text: str) -> tuple[SplitDev, ...]:
    """Devices in ``--list-devices`` output, in the engine's order (the order ``-ts`` follows)."""
    return tuple(SplitDev(id=m.group(1), total_mib=int(m.group(3))) for m in _DEVICE_LINE.finditer(text))


def list_devices(
    bin_path: str, env: Mapping[str, str], timeout: float = LIST_DEVICES_TIMEOUT_S
) -> tuple[SplitDev, ...]:
    """``<bin> --list-devices``; any failure (status, timeout) gives () -- a truncated list is not trusted."""
    return launcher_devices(binary_launcher(bin_path, env), timeout)


def launcher_devices(launcher: EngineLauncher, timeout: float = LIST_DEVICES_TIMEOUT_S) -> tuple[SplitDev, ...]:
    """``--list-devices`` through any launcher; () on any failure."""
    rc, text = run_command(launcher.prefix, ["--list-devices"], launcher.env, timeout * launcher.timeout_scale)
    if rc != 0:
        return ()
    return parse_list_devices(text)


# ---------------------------------------------------------------------------
# On-disk cache of --help / --version
# ---------------------------------------------------------------------------

CACHE_FORMAT = 1
_CACHE_PREFIX = "engine-"
_CACHE_MAX_BYTES = 4 << 20  # real help texts are ~30 KB; refuse to parse anything absurd
# Environment entries that change what the engine prints: the visible GPUs
# (device lists and defaults) and the library path (which backends load).
_KEY_ENV = ("CUDA_VISIBLE_DEVICES", "LD_LIBRARY_PATH")
_LIB_NAME = re.compile(r"^lib.*\.so(\.[0-9.]+)?\Z")


@dataclass(frozen=True)
class EngineTexts:
    """``--help`` / ``--version`` texts ("" = unknown) and how many times the engine ran to get them."""

    help: str = ""
    version: str = ""
    runs: int = 0


def binary_identity(bin_path: str, env: Mapping[str, str]) -> dict | None:
    """What the cached texts depend on; None when the binary cannot be stat'ed.

    The binary's real path, size, mtime and inode (replacing, rebuilding or
    touching it invalidates), the environment entries in ``_KEY_ENV``, and the
    same stat of the shared libraries next to the binary: upgrading
    ``libggml-cuda.so`` alone changes the backends without touching the binary.
    """
    try:
        real = os.path.realpath(bin_path)
        st = os.stat(real)
    except (OSError, ValueError):
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    return {
        "path": real,
        "size": st.st_size,
        "mtime_ns": st.st_mtime_ns,
        "inode": st.st_ino,
        "dev": st.st_dev,
        "env": {name: env.get(name, "") for name in _KEY_ENV},
        "libs": _libs_identity(os.path.dirname(os.path.abspath(bin_path))),
    }


def _libs_identity(directory: str) -> list[list]:
    libs = []
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return []
    for name in names:
        if not _LIB_NAME.match(name):
            continue
        try:
            st = os.stat(os.path.join(directory, name))
        except OSError:
            continue
        libs.append([name, st.st_size, st.st_mtime_ns, st.st_ino])
    return libs


def cache_file(cache_dir: str, identity: Mapping, prefix: str = _CACHE_PREFIX) -> str:
    """One file per (binary path, key environment) and kind: a changed binary overwrites its entry, no pile-up."""
    slot = json.dumps([identity["path"], identity.get("env", {})], sort_keys=True)
    return os.path.join(cache_dir, prefix + hashlib.sha256(slot.encode()).hexdigest()[:32] + ".json")


def _entry_for(path: str, cache_format: int, identity: Mapping) -> dict | None:
    """The cached entry of ``path`` when it is ours, of ``cache_format`` and for this ``identity``."""
    data = _read_json(path) if path else None
    if (
        data is None
        or data.get("format") != cache_format
        or data.get("identity") != json.loads(json.dumps(identity))
    ):
        return None
    return data


def _read_json(path: str) -> dict | None:
    """A JSON object from a cache file that is ours; None otherwise.

    "Ours": a regular file (no symlink followed) owned by this user and not
    writable by group or others -- the cached texts and verdicts decide which
    flags the service gets, so nobody else may plant them.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if (
            not stat.S_ISREG(st.st_mode)
            or st.st_uid != os.geteuid()
            or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
            or st.st_size > _CACHE_MAX_BYTES
        ):
            return None
        with os.fdopen(fd, "rb") as handle:
            fd = -1
            data = json.loads(handle.read(_CACHE_MAX_BYTES + 1))
    except (OSError, ValueError):
        return None
    finally:
        if fd >= 0:
            os.close(fd)
    return data if isinstance(data, dict) else None


def _read_cache(path: str, identity: Mapping) -> dict | None:
    """The cached help/version entry if it is ours and matches ``identity``; None otherwise."""
    data = _entry_for(path, CACHE_FORMAT, identity)
    if (
        data is None
        or not isinstance(data.get("help"), str)
        or not isinstance(data.get("version"), (str, type(None)))
    ):
        return None
    return data


def _write_cache(path: str, identity: Mapping, help_text: str, version: str | None) -> None:
    write_cache_json(path, {"format": CACHE_FORMAT, "identity": identity, "help": help_text, "version": version})


@dataclass(frozen=True)
class EngineLauncher:
    """How to start the engine: the command before its arguments, the environment of that command,
    and the identity its cached texts hold for (None: not startable, e.g. a missing binary).

    A binary is its own prefix; an image is ``docker run ... IMAGE`` (see probe_docker), whose
    container start costs seconds, hence ``timeout_scale``.
    """

    prefix: tuple[str, ...]
    env: Mapping[str, str]
    identity: dict | None
    timeout_scale: float = 1.0


def binary_launcher(bin_path: str, env: Mapping[str, str]) -> EngineLauncher:
    return EngineLauncher(prefix=(bin_path,), env=env, identity=binary_identity(bin_path, env))


def engine_texts(
    bin_path: str,
    env: Mapping[str, str],
    cache_dir: str | None,
    want_version: bool,
    write: bool = True,
) -> EngineTexts:
    """The binary's help (and, if ``want_version``, version) text; see ``launcher_texts``."""
    return launcher_texts(binary_launcher(bin_path, env), cache_dir, want_version, write)


def launcher_texts(
    launcher: EngineLauncher,
    cache_dir: str | None,
    want_version: bool,
    write: bool = True,
) -> EngineTexts:
    """The engine's help (and, if ``want_version``, version) text, from the cache when it is valid.

    ``cache_dir`` None disables the cache. ``write`` False (check mode) reads
    the cache but never creates or changes a file. An empty text is never
    cached: it means the engine did not start (missing libraries, wrong CPU,
    timeout), and a repaired install must be read again even though the
    binary itself did not change. A non-empty help text is cached only when it
    looks like one (status 0, or it lists ``--help``), for the same reason.
    """
    identity = launcher.identity
    if identity is None:
        return EngineTexts()
    path = cache_file(cache_dir, identity) if cache_dir else ""
    cached = _read_cache(path, identity) if path else None

    runs = 0
    help_text = cached["help"] if cached else None
    version = cached["version"] if cached else None
    help_ok = version_ok = True
    if help_text is None:
        rc, out = run_command(launcher.prefix, ["--help"], launcher.env, HELP_TIMEOUT_S * launcher.timeout_scale)
        runs += 1
        help_text = _help_from(rc, out)
        help_ok = bool(help_text)
    if want_version and version is None:
        rc, out = run_command(
            launcher.prefix, ["--version"], launcher.env, VERSION_TIMEOUT_S * launcher.timeout_scale
        )
        runs += 1
        version = out if _started(rc, out) else ""
        version_ok = bool(version)

    if path and write and runs and help_ok:
        _write_cache(path, identity, help_text, version if version_ok else None)
    return EngineTexts(help=help_text, version=version or "", runs=runs)


# ---------------------------------------------------------------------------
# Preflight: the engine's own parser as the last gate (before the host changes)
# ---------------------------------------------------------------------------

# With --help first, llama.cpp still hands every later argument to its own
# handler, runs its post-parse checks, then prints the usage and exits 0
# without loading anything; a bad argument exits 1 with the engine's words.
PREFLIGHT_FLAG = "--help"
PREFLIGHT_TIMEOUT_S = 30.0  # a GPU build initialises its backends before parsing
PREFLIGHT_CACHE_FORMAT = 1
PREFLIGHT_CACHE_KEEP = 32
_PREFLIGHT_PREFIX = "preflight-"
# Exit status of the wrapper when /etc/llama.cpp could not be hidden (not the engine's).
_HIDE_FAILED = 125
_HIDE_SCRIPT = (
    'mount -t tmpfs -o ro,size=4k,mode=0755 llamafleet-empty "$LLAMAFLEET_HIDE" || exit '
    + str(_HIDE_FAILED)
    + '; exec "$@"'
)
_ERROR_WORDS = re.compile(r"error|invalid|unsupported|unknown|not a directory|failed|expected|cannot", re.IGNORECASE)


@dataclass(frozen=True)
class PreflightResult:
    """What the engine's parser said of the planned command line.

    ``passed``: it parsed every argument and printed its usage. ``runs``: engine starts (0: a cached pass).
    ``engine_says``: its own error line(s) when it refused. ``system_config``: ``hidden`` when a
    /etc/llama.cpp/config.ini exists and was kept out of the preflight, ``visible`` when it exists and
    could not be (it then took part, unlike in the service), ``""`` when there is none.
    """

    passed: bool
    runs: int = 0
    engine_says: str = ""
    system_config: str = ""

    def as_dict(self) -> dict:
        return {
            "passed": self.passed,
            "runs": self.runs,
            "engine_says": self.engine_says,
            "system_config": self.system_config,
        }


def preflight_argv(argv: Sequence[str], swaps: Sequence[Sequence], stand_ins: Mapping[str, str]) -> list[str]:
    """The planned argv with ``--help`` first and stand-ins where a value exists only under the service.

    ``swaps`` are the plan's (index, what) pairs (planner.Decisions.preflight_swaps); ``stand_ins`` maps
    each ``what`` to a path valid where the preflight runs. The real key is never involved: its file
    exists only in the running service, and a stand-in file takes its place.
    """
    words = list(argv)
    for index, what in swaps:
        if what in stand_ins and 0 < int(index) < len(words):
            words[int(index)] = stand_ins[what]
    return [words[0], PREFLIGHT_FLAG, *words[1:]] if words else []


def engine_refusal(output: str) -> str:
    """The engine's own words from a refused parse: its error line(s), before the usage it appends."""
    lines: list[str] = []
    for line in output.splitlines():
        if line.strip() == "usage:":
            break
        if line.strip():
            lines.append(line.strip())
    errors = [line for line in lines if _ERROR_WORDS.search(line)]
    return " / ".join(errors or lines[-2:]) or "no output"


def _preflight_key(launcher: EngineLauncher, argv: Sequence[str]) -> str:
    material = json.dumps([launcher.identity, list(launcher.prefix[1:]), dict(launcher.env), list(argv)],
                          sort_keys=True)
    return hashlib.sha256(material.encode()).hexdigest()


def _cached_passes(path: str, identity: Mapping) -> list[str]:
    data = _entry_for(path, PREFLIGHT_CACHE_FORMAT, identity)
    if data is None or not isinstance(data.get("passed"), list):
        return []
    return [key for key in data["passed"] if isinstance(key, str)]


def system_config_present(root: str = "/") -> bool:
    return os.path.isfile(os.path.join(root, SYSTEM_CONFIG.lstrip("/")))


def _hiding_prefix(root: str) -> tuple[list[str], dict[str, str], str]:
    """(command prefix, extra env, state) that keeps /etc/llama.cpp out of a preflight on this host."""
    if not system_config_present(root):
        return [], {}, ""
    unshare = shutil.which("unshare", path=BASE_ENV["PATH"])
    if root != "/" or os.geteuid() != 0 or not unshare:
        return [], {}, "visible"
    prefix = [unshare, "--mount", "--propagation", "private", "--", "/bin/sh", "-c", _HIDE_SCRIPT, "llamafleet"]
    return prefix, {"LLAMAFLEET_HIDE": SYSTEM_CONFIG_DIR}, "hidden"


def run_preflight(
    launcher: EngineLauncher,
    argv: Sequence[str],
    swaps: Sequence[Sequence],
    *,
    cache_dir: str | None,
    write: bool = True,
    root: str = "/",
    in_image: bool = False,
) -> PreflightResult:
    """Run the planned command line through the engine's own parser (``argv`` with ``--help`` first).

    The binary runs with the service's environment only, ``XDG_CONFIG_HOME`` and ``HOME`` on an empty
    directory of its own and /etc/llama.cpp hidden (a private mount namespace, as root), so no
    config.ini takes part; an image runs with those paths on empty tmpfs mounts. A pass is cached by the
    engine's identity, the command and the environment: an unchanged re-run starts the engine 0 times.
    A refusal is never cached (the fix may be outside the command line: a file, a library).
    """
    if launcher.identity is None:
        return PreflightResult(passed=False, engine_says="the engine cannot be started (missing binary or image)")
    path = cache_file(cache_dir, launcher.identity, _PREFLIGHT_PREFIX) if cache_dir else ""
    key = _preflight_key(launcher, argv)
    passes = _cached_passes(path, launcher.identity)
    hide, hide_env, state = ([], {}, "") if in_image else _hiding_prefix(root)
    if key in passes:
        return PreflightResult(passed=True, runs=0, system_config=state)
    with tempfile.TemporaryDirectory(prefix="llamafleet-preflight-") as scratch:
        if in_image:
            stand_ins = {"api_key_file": "/dev/null", "slot_dir": "/tmp"}
            env = dict(launcher.env)
        else:
            slots = os.path.join(scratch, "slots")
            config = os.path.join(scratch, "config")
            os.mkdir(slots, 0o700)
            os.mkdir(config, 0o700)
            stand_ins = {"api_key_file": os.devnull, "slot_dir": slots}
            env = {**launcher.env, "XDG_CONFIG_HOME": config, "HOME": scratch, **hide_env}
        words = preflight_argv(argv, swaps, stand_ins)
        rc, out = run_command(
            [*hide, *launcher.prefix], words[1:], env, PREFLIGHT_TIMEOUT_S * launcher.timeout_scale
        )
    if rc == _HIDE_FAILED and hide:
        return PreflightResult(
            passed=False, runs=1, system_config=state,
            engine_says=f"could not hide {SYSTEM_CONFIG_DIR} for the preflight: {engine_refusal(out)}",
        )
    if rc is None and out.startswith(CANNOT_START):
        return PreflightResult(passed=False, runs=0, system_config=state, engine_says=out[len("llamafleet: "):])
    if rc is None:
        return PreflightResult(
            passed=False, runs=1, system_config=state,
            engine_says=f"the engine did not answer within {PREFLIGHT_TIMEOUT_S * launcher.timeout_scale:.0f} s",
        )
    if rc != 0 or PREFLIGHT_FLAG not in out:
        return PreflightResult(passed=False, runs=1, engine_says=engine_refusal(out), system_config=state)
    if path and write:
        kept = [*[k for k in passes if k != key][-(PREFLIGHT_CACHE_KEEP - 1):], key]
        write_cache_json(path, {"format": PREFLIGHT_CACHE_FORMAT, "identity": launcher.identity, "passed": kept})
    return PreflightResult(passed=True, runs=1, system_config=state)


# ---------------------------------------------------------------------------
# The device list, cached like the help (a re-run on an unchanged host starts nothing)
# ---------------------------------------------------------------------------

DEVICES_CACHE_FORMAT = 1
_DEVICES_PREFIX = "devices-"


@dataclass(frozen=True)
class DeviceList:
    """The engine's ``--list-devices``: ``devices`` is None when it could not be read (then nothing is checked)."""

    devices: tuple[SplitDev, ...] | None = None
    runs: int = 0


def cached_devices(
    launcher: EngineLauncher, cache_dir: str | None, write: bool = True, timeout: float = LIST_DEVICES_TIMEOUT_S
) -> DeviceList:
    """``--list-devices`` through ``launcher``, from the cache when the engine's identity is unchanged.

    Only a complete answer (status 0) is kept: a failed or truncated list is "unknown", and asked again.
    """
    if launcher.identity is None:
        return DeviceList()
    path = cache_file(cache_dir, launcher.identity, _DEVICES_PREFIX) if cache_dir else ""
    data = _entry_for(path, DEVICES_CACHE_FORMAT, launcher.identity)
    if data is not None and isinstance(data.get("text"), str):
        return DeviceList(devices=parse_list_devices(data["text"]), runs=0)
    rc, text = run_command(launcher.prefix, ["--list-devices"], launcher.env, timeout * launcher.timeout_scale)
    if rc != 0:
        return DeviceList(runs=1)
    if path and write:
        write_cache_json(path, {"format": DEVICES_CACHE_FORMAT, "identity": launcher.identity, "text": text})
    return DeviceList(devices=parse_list_devices(text), runs=1)
