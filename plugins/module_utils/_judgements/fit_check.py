# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The engine's own memory projection as the last check before a placed replica starts on its host.

llama.cpp builds ``llama-fit-params`` from the same tree as ``llama-server``: given the model and the memory
arguments, ``--fit-print on`` prints what it would allocate per device (model, context, compute, in MiB) without
loading the weights. The placement chose the host from our own estimate; this check asks the engine itself, on
the host, with the planned arguments, as the engine's parser is asked about argv.

Pure: the arguments to give it, its answer read, and the verdict. ``step.py`` runs it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

FIT_PARAMS = "llama-fit-params"
# A flag: "-x" or "--xx" followed by a letter (a negative number such as "-1" is a value).
_FLAG = re.compile(r"--?[A-Za-z]")
# One device row of --fit-print on: "<device> <model> <context> <compute>".
_ROW = re.compile(r"([A-Za-z][A-Za-z0-9_.:-]*)\s+(\d+)\s+(\d+)\s+(\d+)\s*")
# A flag as llama.cpp's --help lists it, at the start of a line or after a comma.
_HELP_FLAG = re.compile(r"(?:^|,)\s*(--?[A-Za-z][A-Za-z0-9-]*)", re.MULTILINE)


def help_flags(help_text: str) -> frozenset[str]:
    """Every flag spelling a llama.cpp tool's --help lists."""
    flags = set()
    for line in help_text.splitlines():
        if line.startswith("-"):
            # The spellings come first, comma-separated ("-c,    --ctx-size N"), then the value's name and the text.
            flags.update(match.group(1) for match in _HELP_FLAG.finditer(line))
    return frozenset(flags)


def projection_argv(server_argv: Sequence[str], accepted: frozenset[str]) -> list[str]:
    """The planned server arguments the estimator reads (those its --help lists, with their values), then
    ``--fit-print on``. ``server_argv`` starts with the engine binary, which is dropped. llama-server takes no
    positional argument, so a token after a flag that is not itself a flag is that flag's value."""
    kept: list[str] = []
    tokens = list(server_argv[1:])
    position = 0
    while position < len(tokens):
        token = tokens[position]
        flag, equals, _value = token.partition("=")
        takes_next = (not equals and position + 1 < len(tokens) and not _FLAG.match(tokens[position + 1]))
        group = tokens[position:position + (2 if takes_next else 1)]
        position += len(group)
        if flag in accepted and flag not in ("--fit-print", "-h", "--help"):
            kept += group
    return [*kept, "--fit-print", "on"]


def parse_projection(text: str) -> dict[str, int]:
    """{device: MiB it projects (model + context + compute)} from the estimator's output (log lines ignored)."""
    rows = {}
    for line in text.splitlines():
        match = _ROW.fullmatch(line.strip())
        if match:
            rows[match.group(1)] = sum(int(match.group(n)) for n in (2, 3, 4))
    return rows


def fit_refusal(rows: Mapping[str, int], *, ram_free_mib: int, ram_margin_mib: int,
                cards_free_mib: Sequence[int], gpu_margin_mib: int) -> str:
    """Why the projection does not fit what the host has free ("" when it fits). The host row against the free
    RAM, the n-th card row (CUDA0, CUDA1, ... in the replica's visible order) against the n-th card's free memory,
    each less its margin. A card whose free memory is unknown (-1) is not judged."""
    if not rows:
        return ""
    problems = []
    for device, mib in sorted(rows.items()):
        if device.lower() in ("host", "cpu"):
            room = ram_free_mib - ram_margin_mib
            if mib > room:
                problems.append(f"{device}: {mib} MiB, the host has {ram_free_mib} MiB of RAM free less "
                                f"{ram_margin_mib} MiB kept free")
            continue
        digits = re.search(r"(\d+)\Z", device)
        index = int(digits.group(1)) if digits else -1
        if 0 <= index < len(cards_free_mib) and cards_free_mib[index] >= 0:
            room = cards_free_mib[index] - gpu_margin_mib
            if mib > room:
                problems.append(f"{device}: {mib} MiB, the card has {cards_free_mib[index]} MiB free less "
                                f"{gpu_margin_mib} MiB kept free")
    if not problems:
        return ""
    return "the engine's own estimate (llama-fit-params) does not fit: " + "; ".join(problems)
