"""A router instance's models file read by the real engine (llama-server in router mode, the CPU build).

The file is written by _render/router_presets.py. The engine gives back what it read: ``status.preset`` of
``GET /v1/models`` (its own rendering of each section) and, once a model loads, ``status.args`` (the child's argv).
Values that the INI grammar keeps (blanks, brackets, '=', quotes) come back unchanged; a raw file shows what the
values refused by the renderer would have done (a ';' cuts the value, a line break opens a new model).
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._judgements.router_change import router_change
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._judgements.router_models import (
    model_differences,
    read_router_models,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.flag_table import read_flag_table
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._render.router_presets import (
    RouterPresetError,
    model_options,
    parse_models_file,
    render_models_file,
)

from .conftest import free_port

KEY = "router-key-integration-7"


def _call(url: str, body: dict | None = None, key: str = KEY, timeout: float = 120) -> tuple[int, dict]:
    data = json.dumps(body).encode() if body is not None else None
    headers = {"Content-Type": "application/json"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    request = urllib.request.Request(url, data=data, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            return answer.status, json.loads(answer.read() or b"{}")
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read() or b"{}")


class Router:
    """llama-server in router mode on a models file, until closed (its children go with it)."""

    def __init__(self, engine_bin: str, models_file: Path, workdir: Path, models_max: int = 1):
        key_file = workdir / "api-key"
        key_file.write_text(KEY)
        key_file.chmod(0o600)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = (workdir / "router.log").open("w")
        self.process = subprocess.Popen(
            [engine_bin, "--models-preset", str(models_file), "--models-max", str(models_max), "--api-key-file",
             str(key_file),
             "--host", "127.0.0.1", "--port", str(self.port)],
            stdout=self.log, stderr=subprocess.STDOUT, env={**os.environ, "LLAMA_ARG_THREADS": "1"})
        self.log_path = workdir / "router.log"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                break
            try:
                if _call(self.url + "/health", key="", timeout=2)[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.2)
        self.close()
        pytest.fail(f"the router did not answer /health: {self.log_path.read_text()[-3000:]}")

    def models(self) -> dict[str, dict]:
        status, answer = _call(self.url + "/v1/models")
        assert status == 200, answer
        return {model["id"]: model for model in answer["data"]}

    def read_back(self) -> dict[str, dict[str, str]]:
        """Each model's options as the engine read them (its own INI rendering of the section)."""
        return {name: parse_models_file(model["status"]["preset"]).get(name, {})
                for name, model in self.models().items()}

    def close(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.close()


@pytest.fixture(scope="module")
def table(engine_bin):
    return read_flag_table(subprocess.run([engine_bin, "--help"], capture_output=True, text=True, check=True).stdout)


HOSTILE_BUT_WRITABLE = "/srv/slots ] [evil] a=b 'q' \"d\" $HOME %h \\x"


def test_what_the_renderer_writes_is_what_the_engine_reads(tmp_path, engine_bin, model_path, table):
    odd_dir = tmp_path / "my models [v2]=x"
    odd_dir.mkdir()
    model = odd_dir / "gemma 270m.gguf"
    os.symlink(model_path, model)
    models = {
        "chat": ["--model", str(model), "--ctx-size", "512", "--parallel", "1", "--no-jinja", "--alias", "talk,t2"],
        "code": ["--model", model_path, "--ctx-size", "256", "--slot-save-path", HOSTILE_BUT_WRITABLE],
    }
    models_file = tmp_path / "models.ini"
    models_file.write_text(render_models_file(models, table))
    router = Router(engine_bin, models_file, tmp_path)
    try:
        read = router.read_back()
        assert set(read) == {"chat", "code"}  # no section opened by a value
        assert read["chat"]["model"] == str(model)
        assert read["chat"]["ctx-size"] == "512"
        assert read["code"]["slot-save-path"] == HOSTILE_BUT_WRITABLE
        assert read["code"]["ctx-size"] == "256"
        assert all(model["status"]["value"] == "unloaded" for model in router.models().values())
        # The judge's reading: each model runs exactly its planned options, spelled however the engine likes.
        status, answer = _call(router.url + "/v1/models")
        assert status == 200, answer
        listed = read_router_models(answer)
        for name, args in models.items():
            assert model_differences(listed[name], model_options(name, args, table), table) == [], name

        # Loading the model by one of its aliases: the child's argv carries the path with its blanks, brackets and
        # '=' as one word, and the section's name as its alias.
        status, answer = _call(router.url + "/v1/completions", {"model": "talk", "prompt": "Hi", "max_tokens": 2})
        assert status == 200, answer
        loaded = router.models()["chat"]["status"]
        assert loaded["value"] == "loaded"
        args = loaded["args"]
        assert args[args.index("--model") + 1] == str(model)
        assert args[args.index("--ctx-size") + 1] == "512"
        assert "--no-jinja" in args
        assert args[args.index("--alias") + 1] == "chat"
        assert args[args.index("--host") + 1] == "127.0.0.1"
        assert KEY not in " ".join(args)
    finally:
        router.close()


@pytest.mark.parametrize("case", [
    ("/srv/slots;x", "comment"),
    ("/srv/slots#x", "comment"),
    ("/srv/slots\n[evil]\nmodel = /x.gguf", "line break"),
    ("/srv/slots ", "blank"),
])
def test_what_the_renderer_refuses_the_engine_would_misread(tmp_path, engine_bin, model_path, table, case):
    value, reason = case
    with pytest.raises(RouterPresetError, match=reason):
        model_options("code", ["--slot-save-path", value], table)
    # The same value written as it is: the engine reads something else than was meant.
    models_file = tmp_path / "models.ini"
    models_file.write_text(f"[code]\nmodel = {model_path}\nslot-save-path = {value}\n")
    router = Router(engine_bin, models_file, tmp_path)
    try:
        read = router.read_back()
    finally:
        router.close()
    assert read.get("code", {}).get("slot-save-path") != value
    if reason == "line break":
        assert "evil" in read  # a value opened a model of its own


def test_the_engine_refuses_to_start_on_a_file_it_cannot_parse(tmp_path, engine_bin, model_path):
    """Why the renderer never writes an indented key: the engine's grammar has no such line, and the router
    does not start."""
    models_file = tmp_path / "models.ini"
    models_file.write_text(f"[code]\n  model = {model_path}\n")
    key_file = tmp_path / "api-key"
    key_file.write_text(KEY)
    done = subprocess.run([engine_bin, "--models-preset", str(models_file), "--api-key-file", str(key_file),
                           "--host", "127.0.0.1", "--port", str(free_port())],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode != 0
    assert "failed to parse server config file" in done.stdout + done.stderr


def _children(router: Router) -> dict[str, int]:
    """{model id: PID} of the router's running children (their argv carries --alias ID)."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except (OSError, IndexError, ValueError):
            continue
        if parent == router.process.pid and b"--alias" in argv:
            found[argv[argv.index(b"--alias") + 1].decode()] = int(entry.name)
    return found


def test_a_changed_model_is_reloaded_and_the_other_keeps_its_child(tmp_path, engine_bin, model_path, table):
    """The judge asks for a reload of the changed model only; after GET /models?reload=1 the other model's child
    runs on (same PID) and the router reads the plan."""
    models = {"chat": ["--model", model_path, "--ctx-size", "512"], "code": ["--model", model_path, "-c", "256"]}
    models_file = tmp_path / "models.ini"
    models_file.write_text(render_models_file(models, table))
    router = Router(engine_bin, models_file, tmp_path, models_max=2)
    try:
        for name in ("chat", "code"):
            status, answer = _call(router.url + "/v1/completions", {"model": name, "prompt": "Hi", "max_tokens": 1})
            assert status == 200, answer
        before = _children(router)
        assert sorted(before) == ["chat", "code"]
        changed = {**models, "chat": ["--model", model_path, "--ctx-size", "1024"]}
        planned = {name: model_options(name, args, table) for name, args in changed.items()}
        change = router_change([], planned, read_router_models(_call(router.url + "/v1/models")[1]), table)
        assert change.reload == ("chat",)
        models_file.write_text(render_models_file(changed, table))
        status, _answer = _call(router.url + "/models?reload=1")
        assert status == 200
        deadline = time.monotonic() + 15  # the reload stops the changed child (up to its 10 s stop timeout)
        while "chat" in _children(router) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _children(router) == {"code": before["code"]}  # the changed model's child stopped, the other runs on
        listed = read_router_models(_call(router.url + "/v1/models")[1])
        assert router_change([], planned, listed, table).current
    finally:
        router.close()
