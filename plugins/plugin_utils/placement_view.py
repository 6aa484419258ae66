# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet placement as the controller shows it, shared by the placement's action and its filters: Ansible's
containers as plain data, and the placement's table."""

from __future__ import annotations


def plain(value):
    """Ansible's lazy containers as plain ones (the placement reads lists and mappings only)."""
    if isinstance(value, dict):
        return {str(key): plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    return value


def fleet_placement_table(result) -> list[str]:
    """The placement as lines for the output: one per replica, placed or not, then the notes."""
    lines = [f"{'deployment':<24} {'replica':>7}  {'host':<20} {'cards':<14} {'MiB':>8} {'port':>5}  why"]
    rows = [(p["deployment"], p["replica"], p) for p in result.get("placements") or []]
    rows += [(u["deployment"], u["replica"], u) for u in result.get("unplaced") or []]
    for deployment, replica, entry in sorted(rows, key=lambda row: (row[0], row[1])):
        if "host" in entry:
            cards = ",".join(str(uuid)[-8:] for uuid in entry["gpus"]) or "-"
            lines.append(f"{deployment:<24} {replica:>7}  {entry['host']:<20} {cards:<14} {entry['memory_mib']:>8} "
                         f"{entry['port']:>5}  {entry['why']}")
        else:
            lines.append(f"{deployment:<24} {replica:>7}  {'(unplaced)':<20} {'-':<14} {'-':>8} {'-':>5}  "
                         f"{entry['why']}")
    lines += [f"note {note['id']}: {note['text']}" for note in result.get("notes") or []]
    return lines
