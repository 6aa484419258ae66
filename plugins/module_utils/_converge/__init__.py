# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Private to the collection llamafleet.llamacpp: the target side of a converge, I/O included: one
instance's files, unit and engine as the apply step reads and changes them, and the host judge that reads
them without changing anything.

Nothing here is a public API; its names may change in any release. The public entry points are
plugins/module_utils/planner.py and plugins/module_utils/gguf_meta.py.
"""
