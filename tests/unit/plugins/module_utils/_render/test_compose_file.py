"""The compose file's text (compose_file.py): a YAML form written without a YAML library, read back by one."""

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.notes import Note
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._render.compose_file import (
    compose_file_text,
    note_comments,
    yaml_lines,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._render.compose_service import ServiceSpec
from ansible_collections.llamafleet.llamacpp.plugins.module_utils.planner import Decisions, Plan

SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.text())
KEYS = st.one_of(st.text(min_size=1), st.sampled_from(["on", "Yes", "n", "1", "image", "io.llamafleet.x", "- a",
                                                       "a: b", "#c", "~"]))
VALUES = st.recursive(SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                       st.dictionaries(KEYS, inner, max_size=4)), max_leaves=20)
DOCUMENTS = st.dictionaries(KEYS, VALUES, min_size=1, max_size=5)


@settings(max_examples=300, deadline=None)
@given(DOCUMENTS)
def test_every_document_reads_back_as_it_was_written(document):
    text = "\n".join(yaml_lines(document)) + "\n"
    assert yaml.safe_load(text) == document


@pytest.mark.parametrize(
    ("document", "lines"),
    [
        ({"services": {"main": {"command": ["-c", "4096"], "ro": True, "n": 3, "e": {}, "l": [], "z": None}}},
         ["services:", "  main:", "    command:", '      - "-c"', '      - "4096"', "    ro: true", '    "n": 3',
          "    e: {}", "    l: []", "    z: null"]),
        ({"d": [{"driver": "nvidia", "caps": ["gpu"]}, [1]]},
         ["d:", '  - driver: "nvidia"', "    caps:", '      - "gpu"', "  -", "    - 1"]),
        ({"on": "$$HOME\n\u2028"}, ['"on": "$$HOME\\n\\u2028"']),
    ],
    ids=["mapping", "sequence of mappings", "quoted key and escapes"],
)
def test_the_form(document, lines):
    assert yaml_lines(document) == lines


LONG = "k" * 1100
WIDE = "\u0301" * 200  # 200 characters, written as 1200


@pytest.mark.parametrize(
    "document",
    [{LONG: 1}, {WIDE: {"x": [1]}}, {"s": [{LONG: "v", "b": 2}]}, {"s": [{WIDE: [{LONG: None}]}]}],
    ids=["scalar value", "mapping value", "first key in a sequence", "nested"],
)
def test_a_key_too_long_to_be_implicit_is_written_explicit(document):
    text = "\n".join(yaml_lines(document)) + "\n"
    assert "? " in text
    assert yaml.safe_load(text) == document


def test_a_value_of_another_kind_is_refused():
    with pytest.raises(ValueError, match="no float value"):
        yaml_lines({"x": 1.5})


def test_the_file_has_the_notes_as_comments_then_the_service():
    plan = Plan(argv=["/app/llama-server", "-m", "/m/a.gguf", "--host", "127.0.0.1", "--port", "8080"],
                decisions=Decisions(health_url="http://127.0.0.1:8080/health"),
                notes=[Note("n.1", "two\\nlines")], warnings=[Note("w.1", "careful")])
    spec = ServiceSpec(name="main", image="llama:cpu", user="999:999", model_dirs=("/m",))
    text = compose_file_text("main", plan, spec, "llamafleet")
    assert text.splitlines()[:5] == [
        "# Ansible managed", "# llamafleet.llamacpp.llama_server: instance main of compose project llamafleet",
        "# The command below was planned by llamafleet.llamacpp.llama_server_plan; why:",
        "# [n.1] two\\nlines", "# warning [w.1] careful"]
    service = yaml.safe_load(text)["services"]["main"]
    assert service["command"] == ["-m", "/m/a.gguf", "--host", "127.0.0.1", "--port", "8080"]
    assert service["volumes"][0]["source"] == "/m"


def test_a_note_is_one_ascii_comment_line_whatever_it_holds():
    lines = note_comments([Note("n.1", "a\rb\x1b[31m caf\u00e9\u2028x \\ \"q\"")], [])
    assert lines == ['# [n.1] a b\\u001b[31m caf\\u00e9 x \\ "q"']
