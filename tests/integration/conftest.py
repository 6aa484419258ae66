"""Real parts for integration tests: the CPU llama-server and the Gemma-3-270M model.

Both are built/fetched by the project's own scripts (cached outside the repo)
and handed over through environment variables by `make integration`:
LLAMAFLEET_ENGINE_DIR (directory of llama-server), LLAMAFLEET_OLD_ENGINE_DIR
(the same for the older engine generation) and LLAMAFLEET_MODEL (the .gguf
file). A missing part is an error, not a skip: these tests are the proof
that plans run on a real engine.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
COLLECTIONS = REPO / ".collections"


def _required_env(name: str) -> str:
    value = os.environ.get(name, "")
    if not value:
        pytest.fail(f"{name} is not set: run the integration tests through `make integration`", pytrace=False)
    return value


@pytest.fixture(scope="session")
def engine_bin() -> str:
    path = Path(_required_env("LLAMAFLEET_ENGINE_DIR")) / "llama-server"
    assert path.is_file(), f"no llama-server in {path.parent}"
    return str(path)


@pytest.fixture(scope="session")
def old_engine_bin() -> str:
    """The older llama-server generation (no --load-mode, no --fit): scripts/build_engine.sh old."""
    path = Path(_required_env("LLAMAFLEET_OLD_ENGINE_DIR")) / "llama-server"
    assert path.is_file(), f"no llama-server in {path.parent}"
    return str(path)


@pytest.fixture(scope="session")
def model_path() -> str:
    path = Path(_required_env("LLAMAFLEET_MODEL"))
    assert path.is_file(), f"model missing: {path}"
    return str(path)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def run_playbook(tmp_path: Path, tasks: str, extra_vars: dict | None = None, verbosity: int = 0,
                 python: str | None = None):
    """Run tasks on localhost through ansible-playbook; returns (completed process, registered results).

    python: the target interpreter the modules run under (default: the controller's own).
    """
    out_file = tmp_path / "result.json"
    playbook = tmp_path / "play.yml"
    playbook.write_text(
        textwrap.dedent(
            """\
            - name: Integration play
              hosts: localhost
              gather_facts: false
              tasks:
            """
        )
        + textwrap.indent(textwrap.dedent(tasks), "    ")
        + textwrap.indent(
            textwrap.dedent(
                f"""\
                - name: Save results
                  ansible.builtin.copy:
                    content: "{{{{ results | to_json }}}}"
                    dest: {out_file}
                    mode: "0600"
                """
            ),
            "    ",
        )
    )
    inventory = tmp_path / "inventory.ini"
    inventory.write_text(f"localhost ansible_connection=local ansible_python_interpreter={python or sys.executable}\n")
    env = dict(os.environ)
    env.update(
        ANSIBLE_COLLECTIONS_PATH=str(COLLECTIONS),
        ANSIBLE_NOCOLOR="1",
        ANSIBLE_RETRY_FILES_ENABLED="0",
        ANSIBLE_LOCAL_TEMP=str(tmp_path / "ansible-local"),
        ANSIBLE_REMOTE_TEMP=str(tmp_path / "ansible-remote"),
    )
    cmd = [str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(inventory), str(playbook)]
    if verbosity:
        cmd.append("-" + "v" * verbosity)
    if extra_vars:
        cmd += ["-e", json.dumps(extra_vars)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600, check=False)
    results = json.loads(out_file.read_text()) if out_file.exists() else None
    return proc, results


class Server:
    """A llama-server started from a planned argv/env; stopped at teardown."""

    def __init__(self, argv: list[str], env: dict[str, str], log: Path):
        if "--slot-save-path" in argv:
            # The service prepares its slot directory at start (the role's unit does); so does this stand-in.
            Path(argv[argv.index("--slot-save-path") + 1]).mkdir(mode=0o700, parents=True, exist_ok=True)
        self.port = int(argv[argv.index("--port") + 1])
        self.log = log
        full_env = {"PATH": "/usr/bin:/bin", "LD_LIBRARY_PATH": str(Path(argv[0]).parent), **env}
        self._log_handle = log.open("wb")
        self.proc = subprocess.Popen(argv, env=full_env, stdout=self._log_handle, stderr=subprocess.STDOUT)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def wait_healthy(self, timeout: float = 120.0) -> int:
        deadline = time.monotonic() + timeout
        status = 0
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"llama-server exited {self.proc.returncode}:\n{self.log.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(self.url("/health"), timeout=2) as resp:
                    status = resp.status
                    if status == 200:
                        return status
            except urllib.error.HTTPError as err:
                status = err.code  # 503 while loading
            except OSError:
                pass
            time.sleep(0.25)
        raise AssertionError(f"no /health 200 within {timeout}s (last {status}):\n{self.log.read_text()[-3000:]}")

    def complete(self, prompt: str, n_predict: int = 16, headers: dict | None = None) -> dict:
        body = json.dumps({"prompt": prompt, "n_predict": n_predict, "temperature": 0}).encode()
        request = urllib.request.Request(
            self.url("/completion"), data=body, headers={"Content-Type": "application/json", **(headers or {})}
        )
        with urllib.request.urlopen(request, timeout=120) as resp:
            return json.loads(resp.read())

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(2)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log_handle.close()


@pytest.fixture
def start_server(tmp_path):
    servers: list[Server] = []

    def _start(argv, env):
        server = Server(argv, env, tmp_path / f"server-{len(servers)}.log")
        servers.append(server)
        return server

    yield _start
    for server in servers:
        server.stop()
