"""Note values and their presentation helpers."""

import dataclasses

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.notes import Note, gib_text


def test_note_is_frozen_and_compares_by_value():
    note = Note("fit.set", "text")
    assert note == Note("fit.set", "text", "")
    with pytest.raises(dataclasses.FrozenInstanceError):
        note.id = "other"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("note", "as_dict"),
    [
        (Note("fit.set", "t"), {"id": "fit.set", "text": "t"}),
        (Note("fit.ignored", "t", "ctx"), {"id": "fit.ignored", "text": "t", "code": "ctx"}),
    ],
)
def test_as_dict_omits_empty_code(note, as_dict):
    assert note.as_dict() == as_dict


@pytest.mark.parametrize(("mib", "text"), [(83968, "82.0 GiB"), (0, "0.0 GiB"), (1536, "1.5 GiB"), (100, "0.1 GiB")])
def test_gib_text(mib, text):
    assert gib_text(mib) == text
