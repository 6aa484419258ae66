"""Find the model files a preset names: MODEL, MMPROJ, MODEL_DRAFT.

Spec sections 1.1 (steps 3-4), 15 and 16.1. Unlike the other probes, these
raise: a service started on a missing or half-downloaded model would fail in a
restart loop, so the module reports the error instead (ModelPathError, a
ValueError, carries the message shown to the user). MODEL_DRAFT is the
exception: its failure is recorded and the engine starts without a draft.

Shard families (split models) belong to gguf_header.py; this module only asks it
which family members are missing and how to say so.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.gguf_header import (
    missing_shards_message,
    shard_family_missing,
)


class ModelPathError(ValueError):
    """A model value that cannot be used; ``str(error)`` is the user-facing message."""


def _clean_dir(path: str, home: str) -> str:
    # Relative extra directories resolve against the home directory, where the
    # service runs (Loki used its own working directory; a module's working
    # directory is Ansible's temporary directory, which means nothing).
    return os.path.normpath(os.path.join(home, path))


def model_search_dirs(home: str, model_dirs: Sequence[str]) -> list[str]:
    """Where relative model names are looked up: ``<home>/models`` first, then ``model_dirs``.

    Absolute, normalised, de-duplicated, empty entries skipped; the models
    directory is never repeated among the extras.
    """
    home = os.path.abspath(home)
    dirs = [os.path.join(home, "models")]
    for entry in model_dirs:
        extra = str(entry).strip()
        if not extra:
            continue
        cleaned = _clean_dir(extra, home)
        if cleaned not in dirs:
            dirs.append(cleaned)
    return dirs


def _inside(path: str, directory: str) -> bool:
    # Prefix test on normalised paths, as the spec says; symlinks are not
    # resolved (an absolute path outside every directory is accepted anyway
    # when it is an existing file).
    if path == directory:
        return True
    return path.startswith(directory if directory.endswith(os.sep) else directory + os.sep)


def _trim_value(value: str) -> str:
    return str(value).strip().strip('"').strip()


def resolve_model_path(value: str, home: str, model_dirs: Sequence[str]) -> str:
    """Absolute path of a model value (spec 16.1, serve variant); the file may not exist.

    Raises ModelPathError: "invalid model name", "the model must be a .gguf
    file", "directory not allowed: <dir>".
    """
    name = _trim_value(value)
    if not name:
        raise ModelPathError("invalid model name")
    if not name.lower().endswith(".gguf"):
        raise ModelPathError("the model must be a .gguf file")
    dirs = model_search_dirs(home, model_dirs)

    if os.path.isabs(name):
        path = os.path.normpath(name)
        if any(_inside(path, d) for d in dirs):
            return path
        if os.path.isfile(path):  # serve variant: any existing file the admin names
            return path
        raise ModelPathError(f"directory not allowed: {os.path.dirname(path)}")

    # Relative: the base name only. Both separators count, so a preset written
    # on Windows (models\x.gguf, C:\models\x.gguf) works here; a sub-directory
    # in the value is dropped.
    base = name.replace("\\", "/").rsplit("/", 1)[-1]
    for directory in dirs:
        candidate = os.path.join(directory, base)
        if os.path.isfile(candidate):
            return candidate
    # The caller's existence check reports "model not found: <this path>".
    return os.path.join(dirs[0], base)


def resolve_main_model(value: str, home: str, model_dirs: Sequence[str]) -> str:
    """The main model's absolute path; every shard of a split model must be present.

    Raises ModelPathError: "MODEL not defined", the resolution errors,
    "model not found: <path>", "incomplete model: missing <names> in <dir> —
    this model has <total> files, download them all".
    """
    if not str(value).strip():
        raise ModelPathError("MODEL not defined")
    path = resolve_model_path(value, home, model_dirs)
    if not os.path.isfile(path):
        raise ModelPathError(f"model not found: {path}")
    directory, base = os.path.split(path)
    missing = shard_family_missing(directory, base)
    if missing:
        raise ModelPathError(missing_shards_message(directory, base, missing))
    return path


def resolve_mmproj(value: str, home: str, model_dirs: Sequence[str]) -> str:
    """The vision projector's path, "" when MMPROJ is empty (spec 15). Errors are fatal."""
    shown = str(value).strip()
    if not shown:
        return ""
    try:
        path = resolve_model_path(value, home, model_dirs)
    except ModelPathError as err:
        raise ModelPathError(f"vision projector not found: {shown} ({err})") from err
    if not os.path.isfile(path):
        raise ModelPathError(f"vision projector not found: {path}")
    return path


def resolve_draft(value: str, home: str, model_dirs: Sequence[str]) -> tuple[str, str]:
    """(path, error) for MODEL_DRAFT; never raises (spec 15: the engine starts without a draft).

    ("", "") when the value is empty; ("", reason) when it cannot be used --
    the planner's note then reads "MODEL_DRAFT=<value> not found (<reason>)".
    """
    if not str(value).strip():
        return "", ""
    try:
        path = resolve_model_path(value, home, model_dirs)
    except ModelPathError as err:
        return "", str(err)
    if not os.path.isfile(path):
        return "", f"no such file: {path}"
    return path, ""


def same_file(a: str, b: str) -> bool:
    """Whether two paths name the same file (MODEL_DRAFT = the model itself, spec 13.9); False on any error."""
    if not a or not b:
        return False
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return False
