# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet summary's filters; the table is made in plugin_utils/fleet_summary.py, which the action shares."""

from __future__ import annotations

from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils.fleet_summary import (
    fleet_summary_markdown,
    fleet_summary_rows,
)


class FilterModule:
    def filters(self):
        return {
            "fleet_summary_markdown": fleet_summary_markdown,
            "fleet_summary_rows": fleet_summary_rows,
        }
