"""What reaches an engine besides its command line, and how each runtime shuts out what the plan did not say.

llama.cpp (b11434 and later) applies ``/etc/llama.cpp/config.ini`` and
``$XDG_CONFIG_HOME/llama.cpp/config.ini`` (else ``~/.config/llama.cpp/config.ini``)
to every run, before the environment and the command line; and it reads
``LLAMA_ARG_*`` (and ggml its ``GGML_*``, the CUDA runtime its ``CUDA_*``) from the
environment. A stray file or variable on a host would silently change every
instance there. So the service, its container and the preflight all run with:

* ``XDG_CONFIG_HOME`` on a directory that is empty for them (the unit's private
  /tmp, the container's tmpfs /tmp, the preflight's own scratch directory);
* ``/etc/llama.cpp`` made inaccessible (unit), an empty tmpfs (container) or an
  empty mount in a private namespace (preflight);
* the engine's variables only from the plan and the service environment the
  planner read: those the systemd manager would pass on are unset.

Pure: names and rules only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

SYSTEM_CONFIG_DIR = "/etc/llama.cpp"
SYSTEM_CONFIG = SYSTEM_CONFIG_DIR + "/config.ini"
# In the unit's private /tmp (PrivateTmp=yes) and the container's tmpfs /tmp: empty, so no config.ini below it.
NO_CONFIG_HOME = "/tmp/llamafleet-no-config"
# A container's tmpfs mounts: an empty /etc/llama.cpp over the image's, and /tmp for NO_CONFIG_HOME.
CONTAINER_NO_CONFIG_MOUNTS = (SYSTEM_CONFIG_DIR + ":ro,size=4k", "/tmp")

# Variables the engine, ggml or the CUDA runtime read (what probes pass on to the engine they start).
ENGINE_VARIABLE_PREFIXES = ("GGML_", "LLAMA_ARG_", "CUDA_")
# The key variable: read by the engine too, but a secret, so never passed by a probe (a docker --env shows in ps).
KEY_VARIABLE = "LLAMA_API_KEY"


def is_engine_variable(name: str) -> bool:
    return name.startswith(ENGINE_VARIABLE_PREFIXES)


def names_to_unset(manager_env: Mapping[str, str], kept: Iterable[str]) -> list[str]:
    """Engine variables (the key's included) the systemd manager would pass to the unit and the plan did not set."""
    keep = set(kept)
    return sorted(
        name for name in manager_env if (is_engine_variable(name) or name == KEY_VARIABLE) and name not in keep
    )


def environment_problem(env: Mapping[str, str]) -> tuple[str, str]:
    """(name, why) of the first variable of a service environment that cannot reach an engine as meant.

    A name that is no variable name, a NUL anywhere (no process environment can hold one), or an engine
    variable set to nothing: llama.cpp reads an empty LLAMA_ARG_X as the value "" (its handler then
    refuses or misreads it), except the LLAMA_ARG_NO_X switches, whose presence alone means off.
    ``("", "")`` when every variable is fine.
    """
    for name in sorted(env):
        value = str(env[name])
        if not name or not name.replace("_", "a").isalnum() or not name.isascii() or name[0].isdigit():
            return name, "is not a variable name ([A-Za-z_][A-Za-z0-9_]*)"
        if "\x00" in value:
            return name, "holds a NUL character, which no process environment can carry"
        if name.startswith("LLAMA_ARG_") and not name.startswith("LLAMA_ARG_NO_") and not value.strip():
            return name, "is set to nothing: llama.cpp would read an empty value; remove it or give it one"
    return "", ""


def parse_show_environment(text: str) -> dict[str, str]:
    """``systemctl show-environment`` output: one ``NAME=value`` per line (values may be $'…' quoted)."""
    env: dict[str, str] = {}
    for line in text.splitlines():
        name, sep, value = line.partition("=")
        if sep and name and name.replace("_", "a").isalnum() and not name[0].isdigit():
            env[name] = value
    return env
