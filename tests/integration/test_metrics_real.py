"""The fleet's metrics on real parts: engines planned with METRICS=on, Debian's HAProxy with its exporter, the targets
file written by the fleet_metrics_targets action through Ansible, and Debian's Prometheus scraping it with the scrape
configuration docs/metrics.md gives, until it finds every target up.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
import yaml

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._judgements.report import report_entry
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.expectations import Expectations
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.notes import Note
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.planned import Planned
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.preset_layers import preset_version
from ansible_collections.llamafleet.llamacpp.plugins.module_utils.planner import Decisions, Plan

from .conftest import REPO, free_port, run_playbook
from .haproxy_gateway import CLIENT_KEY, Gateway

ENGINE_KEY = "engine-key-metrics-3"
DOC_TARGETS = "/etc/prometheus/targets/llamafleet.json"
DOC_ENGINE_KEY = "/etc/prometheus/llamafleet-engines.key"
DOC_GATEWAY_KEY = "/etc/prometheus/llamafleet-gateway.key"


def _prometheus() -> str:
    path = shutil.which("prometheus") or "/usr/bin/prometheus"
    assert Path(path).is_file(), "prometheus is not installed: .ci/run installs Debian's prometheus"
    return path


def documented_scrape_configs() -> list:
    """The scrape configuration of docs/metrics.md, as an operator would copy it."""
    text = (REPO / "docs" / "metrics.md").read_text()
    block = re.search(r"```yaml\n(scrape_configs:.*?)```", text, re.S)
    assert block, "docs/metrics.md has no scrape_configs block"
    return yaml.safe_load(block.group(1))["scrape_configs"]


def _get(url: str, key: str = "", timeout: float = 10):
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {key}"} if key else {})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


def _plan_engines(tmp_path, engine_bin, model_path, key_file, aliases):
    """Both engines planned by llama_server_plan with METRICS on (one from the key, one from a YAML true)."""
    ports = [free_port() for _alias in aliases]
    items = [{"bin": engine_bin, "home": str(tmp_path / f"home-{alias}"), "model_dirs": [str(Path(model_path).parent)],
              "api_key_file": str(key_file),
              "preset": {"MODEL": Path(model_path).name, "HOST": "0.0.0.0", "PORT": port, "CTX": 2048, "THREADS": 1,
                         "METRICS": metrics, "EXTRA_ARGS": f"--alias {alias}"}}
             for alias, port, metrics in zip(aliases, ports, ["on", True], strict=True)]
    for item in items:
        Path(item["home"]).mkdir()
    tasks = ("- name: Plan\n"
             "  llamafleet.llamacpp.llama_server_plan: \"{{ item }}\"\n"
             f"  loop: {json.dumps(items)}\n"
             "  register: results\n")
    proc, results = run_playbook(tmp_path, tasks)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return items, list(results["results"])


def _planned(result: dict) -> Planned:
    """What the instance step holds of a plan (the fields a report row reads), from llama_server_plan's result."""
    decisions = result["decisions"]
    return Planned(Plan(argv=result["argv"], notes=[Note(**note) for note in result["notes"]],
                        decisions=Decisions(host=decisions["host"], port=decisions["port"],
                                            metrics=decisions["metrics"], expect=Expectations(**decisions["expect"]))),
                   facts=result["facts"])


def _write_targets(tmp_path, fleet: dict, metrics_url: str, path: Path):
    """The action as the deploy playbook runs it: this host's report, presets and instances (``fleet``), a gateway
    host's exporter URL."""
    rows, presets, instances = fleet["report"], fleet["presets"], fleet["instances"]
    tasks = f"""\
        - name: This host as a fleet host reached at 127.0.0.1
          ansible.builtin.set_fact:
            ansible_host: 127.0.0.1
            llama_server_report: {json.dumps(rows)}
            llama_server_presets: {json.dumps(presets)}
            llama_server_instances: {json.dumps(instances)}

        - name: The gateway host
          ansible.builtin.add_host:
            name: edge1
            llama_gateway_metrics_url: {metrics_url}

        - name: Write the targets
          llamafleet.llamacpp.fleet_metrics_targets:
            hosts: [localhost]
            gateways: [edge1]
            path: {path}
          register: results
        """
    proc, result = run_playbook(tmp_path, tasks)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return result


class Prometheus:
    def __init__(self, directory: Path, scrape_configs: list):
        self.port = free_port()
        config = directory / "prometheus.yml"
        config.write_text(yaml.safe_dump({"global": {"scrape_interval": "1s", "scrape_timeout": "1s"},
                                          "scrape_configs": scrape_configs}))
        check = subprocess.run(["promtool", "check", "config", str(config)], capture_output=True, text=True,
                               check=False)
        assert check.returncode == 0, check.stdout + check.stderr
        self.log = (directory / "prometheus.log").open("wb")
        self.proc = subprocess.Popen(
            [_prometheus(), f"--config.file={config}", f"--storage.tsdb.path={directory / 'data'}",
             f"--web.listen-address=127.0.0.1:{self.port}"], stdout=self.log, stderr=subprocess.STDOUT)

    def api(self, path: str, **query):
        url = f"http://127.0.0.1:{self.port}/api/v1/{path}"
        if query:
            url += "?" + urllib.parse.urlencode(query)
        status, text = _get(url, timeout=5)
        assert status == 200, text
        return json.loads(text)["data"]

    def wait_targets_up(self, count: int, timeout: float = 90) -> list:
        deadline = time.monotonic() + timeout
        targets: list = []
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, f"prometheus exited {self.proc.returncode}"
            try:
                targets = self.api("targets", state="active")["activeTargets"]
            except OSError:
                targets = []
            if len(targets) == count and all(target["health"] == "up" for target in targets):
                return targets
            time.sleep(0.5)
        raise AssertionError(f"not every target up in {timeout}s: "
                             f"{[(t['scrapeUrl'], t['health'], t['lastError']) for t in targets]}")

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()


@pytest.fixture
def engine_key_file(tmp_path):
    path = tmp_path / "engine.key"
    path.write_text(ENGINE_KEY + "\n")
    path.chmod(0o600)
    return path


def test_prometheus_finds_every_engine_and_gateway_up(tmp_path, engine_bin, model_path, start_server,
                                                      engine_key_file):
    aliases = ["alpha", "beta"]
    items, plans = _plan_engines(tmp_path, engine_bin, model_path, engine_key_file, aliases)
    for plan in plans:
        assert plan["decisions"]["metrics"] is True
        assert plan["argv"].count("--metrics") == 1
    engines = [start_server(plan["argv"], plan["env"]) for plan in plans]
    for engine in engines:
        assert engine.wait_healthy() == 200
    # Behind the key, like every endpoint but /health and the model list.
    assert _get(engines[0].url("/metrics"))[0] == 401
    assert _get(engines[0].url("/metrics"), ENGINE_KEY)[0] == 200

    proxy = Gateway(tmp_path, {"metrics_port": free_port()}, [])
    try:
        rows = []
        for alias, plan in zip(aliases, plans, strict=True):
            _status, props = _get(f"http://127.0.0.1:{plan['decisions']['port']}/props", ENGINE_KEY)
            applied = {"state": "deployed", "props": json.loads(props), "runs_plan": True, "health": 200}
            rows.append(report_entry(alias, _planned(plan), applied, f"llama-server-{alias}.service"))
        presets = {"chat": {"MODEL": Path(model_path).name, "CTX": 2048}}
        instances = [{"name": alias, "preset": "chat", "settings": {"PORT": item["preset"]["PORT"]}}
                     for alias, item in zip(aliases, items, strict=True)]
        metrics_url = f"http://127.0.0.1:{proxy.settings_raw['metrics_port']}/metrics"
        targets_file = tmp_path / "targets.json"
        result = _write_targets(tmp_path, {"report": rows, "presets": presets, "instances": instances}, metrics_url,
                                targets_file)
        assert (result["changed"], result["notes"]) == (True, [])
        groups = json.loads(targets_file.read_text())
        assert [group["labels"].get("instance") for group in groups] == ["alpha", "beta", None]

        (tmp_path / "engines.key").write_text(ENGINE_KEY + "\n")
        (tmp_path / "gateway.key").write_text(CLIENT_KEY + "\n")
        scrape_configs = json.loads(json.dumps(documented_scrape_configs())
                                    .replace(DOC_TARGETS, str(targets_file))
                                    .replace(DOC_ENGINE_KEY, str(tmp_path / "engines.key"))
                                    .replace(DOC_GATEWAY_KEY, str(tmp_path / "gateway.key")))
        prometheus = Prometheus(tmp_path, scrape_configs)
        try:
            targets = prometheus.wait_targets_up(3)
            by_job = sorted((t["labels"]["job"], t["labels"].get("instance"), t["labels"].get("model"))
                            for t in targets)
            assert by_job == [("llamafleet-engines", "alpha", "alpha"), ("llamafleet-engines", "beta", "beta"),
                              ("llamafleet-gateways", "127.0.0.1:" + str(proxy.settings_raw["metrics_port"]),
                               None)]
            version = preset_version({"MODEL": Path(model_path).name, "CTX": 2048})
            engine_labels = [t["labels"] for t in targets if t["labels"]["job"] == "llamafleet-engines"]
            assert {labels["preset_version"] for labels in engine_labels} == {version}
            assert {labels["host"] for labels in engine_labels} == {"localhost"}
            # The engines' own series carry the fleet's labels.
            series = prometheus.api("query", query="llamacpp:prompt_tokens_total")["result"]
            assert sorted(s["metric"]["model"] for s in series) == aliases
            assert prometheus.api("query", query="haproxy_process_nbthread")["result"]
        finally:
            prometheus.stop()
    finally:
        proxy.stop()
