#!/usr/bin/python
# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: llama_server_models
short_description: Check model files against their verified size and mtime, and their checksum when those changed
version_added: "0.2.0"
description:
  - For every model file, compares its size, modification time and inode with the marker written when the file
    was last verified. An unchanged file is not read (a model can weigh hundreds of GB).
  - A file whose size or mtime changed (truncated by a full disk, rewritten by hand) is hashed again. If the
    checksum still matches, the marker is renewed; if not, the file is listed in RV(fetch) with why, so the
    caller downloads it again (the role uses C(ansible.builtin.get_url)) and marks it with O(state=marked).
  - A missing file is listed in RV(fetch) too.
author:
  - llamafleet maintainers (@llamafleet)
extends_documentation_fragment:
  - llamafleet.llamacpp.attributes
options:
  models:
    description: The model files.
    type: list
    elements: dict
    required: true
    suboptions:
      path:
        description: Absolute path of the file on the target.
        type: path
        required: true
      checksum:
        description: C(<algorithm>:<hex digest>), as for C(ansible.builtin.get_url), for example C(sha256:a5fd...).
        type: str
        required: true
      url:
        description: Where the file comes from; returned with it in RV(fetch), not used otherwise.
        type: str
  marker_dir:
    description: Where the markers live (one JSON file per model and checksum), root only.
    type: path
    required: true
  state:
    description:
      - V(checked) checks every file and renews markers of files that still match. V(marked) writes the markers of
        files just fetched, after checking their checksum.
    type: str
    choices: [checked, marked]
    default: checked
notes:
  - Only the Python standard library is used.
attributes:
  check_mode:
    details: Files are hashed when needed but no marker is written.
"""

EXAMPLES = r"""
- name: Check the model files
  llamafleet.llamacpp.llama_server_models:
    models:
      - path: /var/lib/llamafleet/models/gemma-3-270m-q4_k_m.gguf
        checksum: sha256:a5fd0b6d2e5d4e8a...
    marker_dir: /var/lib/llamafleet/models/.llamafleet
  register: checked
"""

RETURN = r"""
fetch:
  description:
    - The files to download again, each with C(path), C(url) and C(why) (missing, or why its checksum was read).
  returned: always
  type: list
  elements: dict
  sample:
    - path: /var/lib/llamafleet/models/m.gguf
      why: its size changed (262144000 -> 131072000 bytes) and its checksum no longer matches
verified:
  description: Paths of the files whose checksum was read by this run (a changed size or mtime, or just fetched).
  returned: always
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._converge.models import check_models  # noqa: E402


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "models": {
                "type": "list",
                "elements": "dict",
                "required": True,
                "options": {
                    "path": {"type": "path", "required": True},
                    "checksum": {"type": "str", "required": True},
                    "url": {"type": "str"},
                },
            },
            "marker_dir": {"type": "path", "required": True},
            "state": {"type": "str", "choices": ["checked", "marked"], "default": "checked"},
        },
        supports_check_mode=True,
    )
    params = module.params
    result, failure = check_models(params["models"], params["marker_dir"], params["state"], module.check_mode)
    if failure:
        module.fail_json(msg=failure, **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
