# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private to the collection llamafleet.llamacpp: pure decisions of the
apply step: what must restart, whether the engine runs the plan.

Nothing here is a public API; its names may change in any release. The public entry points are
plugins/module_utils/planner.py and plugins/module_utils/gguf_meta.py.
"""
