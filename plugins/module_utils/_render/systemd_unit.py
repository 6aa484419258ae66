"""One planned instance as a systemd unit file: the role's systemd runtime, rendered in Python.

Pure: ``render_unit(UnitSpec) -> str``. The plan decides the command line, the environment, where the engine
listens and the slot directory; this module only writes those decisions down, hardened. Two renders of the
same spec are byte-identical, so an unchanged host keeps its unit (and its running engine).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._inputs import grammar
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._layout.paths import credential_path
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.engine_inputs import (
    NO_CONFIG_HOME,
    SYSTEM_CONFIG_DIR,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.notes import Note
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._render.systemd_quoting import (
    UnitValueError,
    account_value,
    comment_text,
    environment_assignment,
    exec_start,
    path_value,
    quote_exec_word,
)

DOCUMENTATION_URL = "https://github.com/ggml-org/llama.cpp/tree/master/tools/server"

# ExecStartPre of a unit with a slot directory ($1 = directory, $2 = 1 when SLOT_PERSIST is on). It runs as the
# service user: it creates the directory 0700, then deletes every regular file in it except, with SLOT_PERSIST
# on, the saved states the engine names persist-<16 hex>-<12 hex>.bin.
SLOT_SCRIPT = (
    'set -eu; mkdir -p -m 0700 -- "$1"; chmod 0700 -- "$1"; if [ "$2" = 1 ]; '
    'then find "$1" -mindepth 1 -maxdepth 1 -regextype posix-extended -type f '
    "! -regex '.*/persist-[0-9a-f]{16}-[0-9a-f]{12}\\.bin' -delete; "
    'else find "$1" -mindepth 1 -maxdepth 1 -type f -delete; fi'
)


# systemd refuses a unit line over LONG_LINE_MAX (1 MiB); an ExecStart this long is a mistake well before that.
UNIT_LINE_MAX = 256 * 1024


class UnitRenderError(ValueError):
    """A value that cannot be written into a unit file (a newline, a NUL, an unquotable word)."""


@dataclass(frozen=True)
class UnitSpec:
    """Everything a unit says, each value already decided (by the plan or the role's settings)."""

    instance: str
    argv: Sequence[str]
    user: str
    group: str
    home_dir: str
    # The service environment: the user's variables with the plan's over them.
    environment: Mapping[str, str] = field(default_factory=dict)
    unset_environment: Sequence[str] = ()
    key_file: str = ""  # root-only file LoadCredential= reads; empty = no key
    env_file: str = ""  # root-only LLAMA_API_KEY file for an engine without --api-key-file; empty = none
    slot_dir: str = ""
    slot_persist: bool = False
    loopback_only: bool = False
    nvidia: bool = False
    notes: Sequence[Note] = ()
    warnings: Sequence[Note] = ()
    stop_timeout_s: int = 30
    restart_sec: int = 5
    limit_nofile: int = 65536
    protect_home: str = "yes"
    managed: str = "Ansible managed"


def _note_lines(spec: UnitSpec) -> list[str]:
    lines = [f"# [{comment_text(n.id)}] {comment_text(n.text)}" for n in spec.notes]
    lines += [f"# warning [{comment_text(n.id)}] {comment_text(n.text)}" for n in spec.warnings]
    return lines


def _credential_lines(spec: UnitSpec) -> list[str]:
    if spec.env_file:
        return [
            "# This engine has no --api-key-file: LLAMA_API_KEY comes from a root-only file.",
            f"EnvironmentFile={path_value(spec.env_file)}",
        ]
    if spec.key_file:
        return [
            f"# The key reaches the engine as {credential_path(spec.instance)} (--api-key-file).",
            f"LoadCredential=api_key:{path_value(spec.key_file)}",
        ]
    return []


def _slot_lines(spec: UnitSpec) -> list[str]:
    if not spec.slot_dir:
        return []
    kept = " (persist-* states kept: SLOT_PERSIST)" if spec.slot_persist else ""
    return [
        f"# Slot directory: mode 0700, emptied at each start{kept}.",
        f"ExecStartPre=/bin/sh -c {quote_exec_word(SLOT_SCRIPT)} llamafleet-slots "
        f"{quote_exec_word(spec.slot_dir)} {'1' if spec.slot_persist else '0'}",
    ]


def _device_lines(spec: UnitSpec) -> list[str]:
    if spec.nvidia:
        return [
            "# NVIDIA GPUs: /dev/nvidia* must stay visible, so no PrivateDevices; only they are allowed.",
            "PrivateDevices=no",
            "DevicePolicy=closed",
            "DeviceAllow=char-nvidia* rw",
        ]
    return ["PrivateDevices=yes", "DevicePolicy=closed"]


def render_unit(spec: UnitSpec) -> str:
    """The unit file's text; raises UnitRenderError for a value systemd would read differently."""
    try:
        return _render(spec)
    except UnitValueError as err:
        raise UnitRenderError(f"instance {spec.instance}: {err}") from err


def _render(spec: UnitSpec) -> str:
    if not grammar.INSTANCE_NAME.fullmatch(spec.instance):
        raise UnitValueError(f"the instance name {spec.instance!r} does not have the form {grammar.INSTANCE_NAME_FORM}")
    lines = [
        f"# {comment_text(spec.managed)}",
        f"# llamafleet.llamacpp.llama_server: instance {spec.instance}",
        "# The command line below was planned by llamafleet.llamacpp.llama_server_plan; why:",
        *_note_lines(spec),
        "",
        "[Unit]",
        f"Description=llama.cpp server, instance {spec.instance}",
        f"Documentation={DOCUMENTATION_URL}",
        "Wants=network-online.target",
        "After=network-online.target",
        '# A preset that keeps crashing ends in "failed" instead of looping forever.',
        "StartLimitIntervalSec=300",
        "StartLimitBurst=5",
        "",
        "[Service]",
        "Type=exec",
        f"User={account_value(spec.user)}",
        f"Group={account_value(spec.group)}",
        f"WorkingDirectory={path_value(spec.home_dir)}",
        *(f"Environment={environment_assignment(k, str(v))}" for k, v in spec.environment.items()),
        "# No llama.cpp config.ini applies: its user directory is an empty place in the private /tmp, and",
        f"# {SYSTEM_CONFIG_DIR} is out of sight. Engine variables come from this unit only.",
        f"Environment={environment_assignment('XDG_CONFIG_HOME', NO_CONFIG_HOME)}",
        f"InaccessiblePaths=-{SYSTEM_CONFIG_DIR}",
        *([f"UnsetEnvironment={' '.join(spec.unset_environment)}"] if spec.unset_environment else []),
        *_credential_lines(spec),
        *_slot_lines(spec),
        f"ExecStart={exec_start(list(spec.argv))}",
        "# llama-server finishes the running requests on SIGINT.",
        "KillSignal=SIGINT",
        f"TimeoutStopSec={int(spec.stop_timeout_s)}",
        "Restart=on-failure",
        f"RestartSec={int(spec.restart_sec)}",
        "# 78 (EX_CONFIG): the load guard refused the launch; restarting cannot help.",
        "RestartPreventExitStatus=78",
        "LimitMEMLOCK=infinity",
        f"LimitNOFILE={int(spec.limit_nofile)}",
        "UMask=0077",
        "",
        "# Hardening (systemd-analyze security). The engine writes only its instance directory.",
        "NoNewPrivileges=yes",
        "ProtectSystem=strict",
        f"ReadWritePaths={path_value(spec.home_dir)}",
        f"ProtectHome={spec.protect_home}",
        "PrivateTmp=yes",
        "PrivateMounts=yes",
        *_device_lines(spec),
        "ProtectKernelTunables=yes",
        "ProtectKernelModules=yes",
        "ProtectKernelLogs=yes",
        "ProtectControlGroups=yes",
        "ProtectClock=yes",
        "ProtectHostname=yes",
        "ProtectProc=invisible",
        "# The engine reads /proc/cpuinfo and /proc/meminfo (and NVIDIA's /proc/driver).",
        "ProcSubset=all",
        f"RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6{' AF_NETLINK' if spec.nvidia else ''}",
        "RestrictNamespaces=yes",
        "RestrictRealtime=yes",
        "RestrictSUIDSGID=yes",
        "LockPersonality=yes",
        *([] if spec.nvidia else ["MemoryDenyWriteExecute=yes"]),
        "RemoveIPC=yes",
        "PrivateUsers=yes",
        "CapabilityBoundingSet=",
        "AmbientCapabilities=",
        "SystemCallArchitectures=native",
        "SystemCallFilter=@system-service",
        "SystemCallFilter=~@privileged",
        "SystemCallErrorNumber=EPERM",
        *(
            ["# Listens on loopback only: no other peer.", "IPAddressDeny=any", "IPAddressAllow=localhost"]
            if spec.loopback_only
            else []
        ),
        "",
        "[Install]",
        "WantedBy=multi-user.target",
    ]
    for line in lines:
        # systemd ends a line at \r as well as \n, and joins the next one to a line that ends in a backslash.
        if any(char in line for char in "\n\r\0") or line.endswith("\\"):
            raise UnitRenderError(f"instance {spec.instance}: a unit line would hold a line break, a NUL or end in a "
                                  f"backslash: {line[:80]!r}")
        why = grammar.utf8_problem(line)
        if why:
            raise UnitRenderError(f"instance {spec.instance}: a unit line cannot be written: {why}: {line[:80]!r}")
        if len(line) > UNIT_LINE_MAX:
            raise UnitRenderError(f"instance {spec.instance}: a unit line would be {len(line)} characters long (at "
                                  f"most {UNIT_LINE_MAX}, below systemd's 1 MiB): {line[:80]!r}")
    return "\n".join(lines) + "\n"
