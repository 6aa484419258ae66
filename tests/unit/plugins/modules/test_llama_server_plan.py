"""llama_server_plan in-process on given host facts (no probing); the probing path runs against the real engine
in tests/integration/test_plan_module_real.py."""

import json

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._converge import planning
from ansible_collections.llamafleet.llamacpp.plugins.modules import llama_server_plan
from tests.unit.support.module_runner import run_module
from tests.unit.support.paths import FIXTURES

HELP = (FIXTURES / "engine" / "llama-server-11434.0.0-cpu.help.txt").read_text()
FACTS = {"help": HELP, "bin": "/opt/e/llama-server", "model": "/m/a.gguf", "ram_mib": 8000, "ram_avail_mib": 6000}


def test_a_plan_from_host_facts(capsys):
    result = run_module(llama_server_plan.main, {"preset": {"ctx": "8k", "port": 8081}, "host_facts": FACTS},
                        capsys, check_mode=True)
    assert result["argv"][:5] == ["/opt/e/llama-server", "-m", "/m/a.gguf", "-c", "8192"]
    assert result["decisions"]["port"] == "8081"
    assert result["decisions"]["expect"]["ctx"] == 8192
    assert result["exec_start"].startswith("/opt/e/llama-server -m /m/a.gguf -c 8192")
    assert result["changed"] is False
    assert result["facts"] == {"source": "host_facts"}


def test_a_preset_file_and_its_key_stay_out_of_the_result(tmp_path, capsys):
    preset = tmp_path / "config.env"
    preset.write_text("CTX=4096\nAPI_KEY=k-top-secret\n")
    result = run_module(llama_server_plan.main, {"preset_file": str(preset), "host_facts": FACTS}, capsys)
    assert "k-top-secret" not in json.dumps(result)
    assert "-c" in result["argv"]


def test_refusals_name_the_key(capsys):
    typo = run_module(llama_server_plan.main, {"preset": {"NLG": 99}, "host_facts": FACTS}, capsys)
    assert typo["failed"] is True
    assert "NLG" in typo["msg"]
    bad = run_module(llama_server_plan.main, {"preset": {"CTX": "4q"}, "host_facts": FACTS}, capsys)
    assert bad["msg"].startswith("CTX")
    unknown = run_module(llama_server_plan.main, {"preset": {}, "host_facts": {**FACTS, "vram": 1}}, capsys)
    assert "unknown field(s) vram" in unknown["msg"]
    unreadable = run_module(llama_server_plan.main, {"preset_file": "/nonexistent/config.env",
                                                     "host_facts": FACTS}, capsys)
    assert unreadable["msg"].startswith("cannot read preset_file /nonexistent/config.env")


def test_the_previous_state_file_gives_the_stable_ram_reading(tmp_path):
    state = tmp_path / "instance-main.json"
    state.write_text('{\n    "ram_avail_mib": 5000\n}\n')
    assert planning.previous_ram_avail(str(state)) == 5000
    state.write_text("not json")
    assert planning.previous_ram_avail(str(state)) == 0
    assert planning.previous_ram_avail(str(tmp_path / "none.json")) == 0
    assert planning.previous_ram_avail(None) == 0


def test_the_plan_module_alone_refuses_what_the_role_refuses(capsys):
    cases = [
        ({"instance": "main\n"}, "instance name 'main\\n'"),
        ({"instance": "../../tmp/evil"}, "instance name '../../tmp/evil'"),
        ({"environment": {"LLAMA_API_KEY": "k-top-secret"}}, "LLAMA_API_KEY names a key or a token"),
        ({"preset": {"API-KEY": "k-top-secret"}}, "preset key 'API-KEY' looks like API_KEY"),
        ({"preset": {"API_KEY": "k,top-secret"}}, "the preset (API_KEY): the API key is refused"),
        ({"preset": {"EXTRA_ARGS": "--api_key k-top-secret"}}, "must not carry --api-key"),
        ({"home": "/var/lib/x\rExecStartPre=/bin/sh"}, "home '/var/lib/x\\rExecStartPre=/bin/sh'"),
        ({"model_dirs": ["/m", "/m/../etc"]}, "model_dirs '/m/../etc': it is not normalised"),
    ]
    for change, said in cases:
        result = run_module(llama_server_plan.main, {"host_facts": FACTS, **change}, capsys)
        assert result["failed"] is True, change
        assert said in result["msg"], (change, result["msg"])
        # The message never holds a key. (The module's invocation does hold an environment's values: no secret
        # reaches the module that way, the controller side refuses it first, tests/unit/plugins/action.)
        assert "k-top-secret" not in result["msg"]
