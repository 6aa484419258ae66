# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet's scrape targets file as it is on the controller: read, and refused when it is not this collection's
(the deploy playbook checks it before any host changes, and writes it at the end)."""

from __future__ import annotations

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._gateway import scrape_targets
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.files import read_bytes


class TargetsFileError(ValueError):
    """The file cannot be read, or is not this collection's: the message says what to do."""


def read_targets(path: str) -> tuple[bytes | None, object]:
    """(the file's bytes, None when there is none; its groups as scrape_targets.read_previous reads them)."""
    try:
        before = read_bytes(path)
    except OSError as err:
        raise TargetsFileError(f"cannot read the scrape targets file {path}: {err}") from None
    try:
        return before, scrape_targets.read_previous(before.decode("utf-8") if before else "")
    except (scrape_targets.TargetsFileError, UnicodeDecodeError) as err:
        raise TargetsFileError(f"{path} was not written by this collection, so it is left as it is: {err}; move it "
                               "away or set llama_fleet_metrics_targets_path to another file") from None
