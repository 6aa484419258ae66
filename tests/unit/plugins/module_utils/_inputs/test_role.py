"""The role's inputs as a whole (role.py): each bad input gives a message naming it; good ones give none."""

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._inputs.role import (
    RoleInputError,
    input_errors,
    instances_in_state,
    model_files,
)

GOOD = {
    "runtime": "systemd", "image": "", "image_pull": "missing", "compose_project": "llamafleet",
    "compose_dir": "/etc/llamafleet/compose",
    "instances": [{"name": "main", "preset": "small", "api_key": "k-1-of-main"}, {"name": "old", "state": "absent"}],
    "presets": {"small": {"MODEL": "m.gguf"}}, "environment": {"GGML_X": "1"},
    "engine_bin": "/usr/local/bin/llama-server", "engine_archive_url": "", "engine_archive_checksum": "",
    "models": [{"url": "https://h/m.gguf", "checksum": "sha256:ab"}], "models_dir": "/var/lib/llamafleet/models",
}

CASES = [
    ("runtime", {"runtime": "podman"}, "llama_server_runtime must be systemd or compose, not 'podman'"),
    ("compose without image", {"runtime": "compose"}, "the compose runtime needs llama_server_image"),
    ("image with a space", {"runtime": "compose", "image": "a b"}, "the compose runtime needs llama_server_image"),
    ("compose project", {"compose_project": "Fleet"},
     "llama_server_compose_project (settings.compose_project) = 'Fleet': it does not have that form; accepted: "
     "lower-case letters"),
    ("compose dir", {"compose_dir": "compose"},
     "llama_server_compose_dir (settings.compose_dir) = 'compose': it is not absolute; accepted: an absolute"),
    ("instance name", {"instances": [{"name": "a b"}]}, "instance name 'a b': it names the unit"),
    ("instance name with a newline", {"instances": [{"name": "main\n"}]}, "instance name 'main\\n'"),
    ("duplicate names", {"instances": [{"name": "a"}, {"name": "a", "state": "absent"}]},
     "given more than once: a"),
    ("state", {"instances": [{"name": "a", "state": "presnt"}]},
     "instance a: state 'presnt'; accepted: present, stopped or absent"),
    ("ports", {"instances": [{"name": "a"}, {"name": "b"}]}, "a and b both plan port 8080"),
    ("ports as numbers", {"instances": [{"name": "a", "port": "08080"}, {"name": "b", "port": 8080}]},
     "a and b both plan port 8080"),
    ("port in EXTRA_ARGS", {"instances": [{"name": "a", "port": 9090, "settings": {"extra_args": "--port 8080"}},
                                          {"name": "b"}]}, "a and b both plan port 8080"),
    ("port= in EXTRA_ARGS", {"instances": [{"name": "a", "settings": {"extra_args": "--port=9000"}},
                                           {"name": "b", "port": 9000}]}, "a and b both plan port 9000"),
    ("unknown preset", {"instances": [{"name": "a", "preset": "nope"}]}, "nope"),
    ("key with a comma", {"instances": [{"name": "a", "api_key": "xxxxxxxx,y"}]},
     "instance a (api_key): the API key is refused: it may only hold"),
    ("env name", {"environment": {"1X": "v"}},
     "llama_server_environment (settings.environment) (variables 1X): the name '1X' is not a variable name"),
    ("key in env", {"instances": [{"name": "a", "environment": {"LLAMA_API_KEY": "s"}}]},
     "instance a: environment: LLAMA_API_KEY names a key or a token"),
    ("no engine", {"engine_bin": ""}, "set either llama_server_engine_bin"),
    ("both engines", {"engine_archive_url": "https://h/e.zip", "engine_archive_checksum": "sha256:1"},
     "set either llama_server_engine_bin"),
    ("archive without checksum", {"engine_bin": "", "engine_archive_url": "https://h/e.zip"},
     "needs llama_server_engine_archive_checksum"),
    ("relative engine", {"engine_bin": "bin/llama-server"}, "llama_server_engine_bin must be an absolute path"),
    ("model without checksum", {"models": [{"url": "https://h/m.gguf"}]},
     "llama_server_models: model 0 needs a url and a checksum"),
    ("model name with a newline", {"models": [{"url": "https://h/m.gguf", "checksum": "c", "name": "m\n.gguf"}]},
     "gives no usable file name ('m\\n.gguf')"),
    ("model name with a slash", {"models": [{"url": "https://h/m.gguf", "checksum": "c", "name": "../m.gguf"}]},
     "gives no usable file name"),
    ("instances not a list", {"instances": {"name": "a"}}, "llama_server_instances must be a list"),
    ("presets not a mapping", {"presets": ["x"]}, "llama_server_presets must be a mapping"),
]


def test_good_inputs_give_no_error():
    assert input_errors(GOOD) == []
    # EXTRA_ARGS' --port wins over PORT: these two do not clash.
    moved = [{"name": "a", "settings": {"extra_args": "--port 9000"}}, {"name": "b"}]
    assert input_errors({**GOOD, "instances": moved}) == []


@pytest.mark.parametrize(("change", "expected"), [(c[1], c[2]) for c in CASES], ids=[c[0] for c in CASES])
def test_each_bad_input_is_named(change, expected):
    errors = input_errors({**GOOD, **change})
    assert any(expected in error for error in errors), errors


def test_a_key_never_appears_in_a_message():
    errors = input_errors({**GOOD, "instances": [{"name": "a", "api_key": "secret value"}]})
    assert errors
    assert not any("secret value" in e for e in errors)


def test_no_engine_is_needed_without_present_instances_or_for_compose():
    assert input_errors({**GOOD, "engine_bin": "", "instances": [{"name": "a", "state": "absent"}]}) == []
    assert input_errors({**GOOD, "engine_bin": "", "runtime": "compose", "image": "img"}) == []


def test_split_and_files():
    assert [i["name"] for i in instances_in_state(GOOD["instances"])] == ["main"]
    assert [i["name"] for i in instances_in_state(GOOD["instances"], "absent")] == ["old"]
    assert model_files([{"url": "https://h/x/m.gguf?dl=1", "checksum": "c"}], "/m") == [
        {"url": "https://h/x/m.gguf?dl=1", "checksum": "c", "path": "/m/m.gguf"}]
    with pytest.raises(RoleInputError, match="gives no usable file name"):
        model_files([{"url": "https://h/", "checksum": "c"}], "/m")
    with pytest.raises(RoleInputError):
        instances_in_state("main")
