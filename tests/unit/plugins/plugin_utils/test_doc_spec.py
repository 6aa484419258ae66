"""An argument spec read from DOCUMENTATION (doc_spec.py)."""

from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils.doc_spec import argument_spec

DOC = """
options:
  name: {description: x, type: str, required: true}
  port: {description: x, type: int, default: 8080}
  mode: {description: x, choices: [a, b], default: a}
  secret: {description: x, type: str, no_log: true, aliases: [key]}
  files:
    description: x
    type: list
    elements: dict
    suboptions:
      path: {description: x, type: path, required: true}
"""


def test_spec_from_documentation():
    assert argument_spec(DOC) == {
        "name": {"type": "str", "required": True},
        "port": {"type": "int", "default": 8080},
        "mode": {"type": "str", "choices": ["a", "b"], "default": "a"},
        "secret": {"type": "str", "no_log": True, "aliases": ["key"]},
        "files": {"type": "list", "elements": "dict", "options": {"path": {"type": "path", "required": True}}},
    }
    assert argument_spec("short_description: none") == {}
