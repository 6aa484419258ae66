from ansible_collections.llamafleet.llamacpp.plugins.module_utils import placement


def test_import_path():
    assert placement.DEFAULT_CTX == "32768"
