"""Debian's HAProxy as the llama_gateway role runs it, for the integration tests: master-worker mode with its master
socket, the
configuration rendered by _gateway/haproxy_config.py and checked by `haproxy -c`, driven through the runtime API."""

from __future__ import annotations

import shutil
import signal
import subprocess
import time
from pathlib import Path

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._converge import gateway
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._gateway import fleet_routes, haproxy_config
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._gateway.settings import gateway_settings

from .conftest import REPO, free_port

LUA = REPO / "roles" / "llama_gateway" / "files" / "llamafleet.lua"
CLIENT_KEY = "client-key-integration-1"
MAX_BODY = 64 * 1024


def run_command(argv):
    """A command as AnsibleModule.run_command runs it: (rc, out, err)."""
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    return done.returncode, done.stdout, done.stderr


def haproxy_path() -> str:
    path = shutil.which("haproxy") or "/usr/sbin/haproxy"
    assert Path(path).is_file(), "haproxy is not installed: .ci/run installs Debian's haproxy and lua-cjson"
    return path


class Gateway:
    """HAProxy in master-worker mode (-W, as Debian's unit runs it); reloaded with SIGUSR2 like `systemctl reload`."""

    def __init__(self, directory: Path, settings_raw: dict, servers: list[fleet_routes.Server]):
        self.directory = directory
        self.port = free_port()
        self.settings_raw = {
            "api_keys": [CLIENT_KEY], "listen_address": "127.0.0.1", "port": self.port,
            "admin_socket": str(directory / "admin.sock"), "state_file": str(directory / "server-state"),
            "lua_path": str(LUA), "run_user": "", "chroot": "", "max_body_bytes": MAX_BODY, "request_timeout_s": 3,
            "queue_timeout_s": 20, "health_interval_s": 1, **settings_raw}
        self.config = directory / "haproxy.cfg"
        self.servers = servers
        self.write(servers)
        self.log = (directory / "haproxy.log").open("wb")
        # The master CLI's socket, as Debian's unit gives it (-S): a drain reads the old workers through it.
        self.proc = subprocess.Popen([haproxy_path(), "-W", "-db", "-S", str(directory / "master.sock"),
                                      "-f", str(self.config)], stdout=self.log, stderr=subprocess.STDOUT)
        self.api = gateway.RuntimeSocket(str(directory / "admin.sock"))
        self.master = gateway.master_socket(str(directory / "master.sock"))
        self.worker = self._wait_for_worker(previous=None)

    def write(self, servers):
        settings, errors = gateway_settings(self.settings_raw)
        assert errors == []
        routes = fleet_routes.routes(servers)
        assert routes.errors == []
        text = haproxy_config.render(settings, routes)
        assert gateway.check_config(run_command, haproxy_path(), text, str(self.directory)) == ""
        self.config.write_text(text)
        (self.directory / "server-state").touch()

    def _wait_for_worker(self, previous):
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                info = self.api.ask("show info")
                pid = next(line.split(": ")[1] for line in info.splitlines() if line.startswith("Pid: "))
                if pid != previous:
                    return pid
            except (gateway.GatewayError, StopIteration):
                pass
            time.sleep(0.1)
        raise AssertionError(f"no HAProxy worker answered:\n{(self.directory / 'haproxy.log').read_text()[-3000:]}")

    def reload(self, servers):
        """Save the servers' states (a drain survives), write the new file, and reload like the role does."""
        gateway.save_server_state(self.api, str(self.directory / "server-state"))
        self.write(servers)
        self.proc.send_signal(signal.SIGUSR2)
        self.worker = self._wait_for_worker(previous=self.worker)
        self._wait_for_master()

    def _wait_for_master(self):
        """The master executes itself again at a reload, and refuses its CLI's connections meanwhile."""
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                self.master.ask("show proc")
                return
            except gateway.GatewayError:
                time.sleep(0.1)
        log = (self.directory / "haproxy.log").read_text()[-3000:]
        raise AssertionError(f"HAProxy's master did not answer:\n{log}")

    def url(self, path):
        return f"http://127.0.0.1:{self.port}{path}"

    def stats(self):
        return {(state.backend, state.server): state for state in self.api.states()}

    def requests_seen(self):
        """Requests the backends were sent (HAProxy's stot of every server)."""
        text = self.api.ask("show stat")
        header = text.splitlines()[0][2:].split(",")
        total = 0
        for line in text.splitlines()[1:]:
            row = dict(zip(header, line.split(","), strict=False))
            if row.get("svname") not in (None, "FRONTEND", "BACKEND"):
                total += int(row.get("stot") or 0)
        return total

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()
