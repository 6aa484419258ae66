"""probe_docker: the engine read from an image, and the instance's own container.

The docker CLI here is a shell script written into tmp_path that logs its
arguments and answers like the real one (image ID, help text, container state);
the real CLI against a real engine is exercised by the compose molecule scenario.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.docker import (
    ContainerState,
    DockerAccess,
    container_state,
    image_id,
    image_launcher,
    parse_container_state,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.engine import (
    engine_variables,
    launcher_devices,
    launcher_texts,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.memory import process_memory_mib
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.port import (
    Owner,
    describe_owner,
    parse_cgroup_container,
)

IMAGE_ID = "sha256:" + "ab" * 32
CONTAINER_ID = "c0ffee" + "0" * 58
HELP = "usage: llama-server [options]\n-h, --help  print usage and exit\n--api-key-file FNAME\n"


def fake_docker(
    directory: Path, image_id_text: str = IMAGE_ID, state: str = f"{CONTAINER_ID} 4242"
) -> tuple[str, Path]:
    """A docker CLI that logs each call (one line of arguments) and answers inspect/run."""
    directory.mkdir(parents=True, exist_ok=True)
    log = directory / "calls.log"
    (directory / "help.txt").write_text(HELP)
    script = directory / "docker"
    script.write_text(f"""#!/bin/sh
echo "DOCKER_HOST=$DOCKER_HOST $*" >> '{log}'
case "$1 $2" in
  "image inspect") [ -n '{image_id_text}' ] && echo '{image_id_text}' && exit 0; echo "no such image" >&2; exit 1 ;;
  "container inspect") [ -n '{state}' ] && echo '{state}' && exit 0; echo "no such container" >&2; exit 1 ;;
esac
if [ "$1" = run ]; then
  for last; do :; done
  case "$last" in
    --help) cat '{directory}/help.txt' ;;
    --version) echo "version: 11434 (0000000)" >&2 ;;
    --list-devices) printf 'Available devices:\\n  CUDA0: NVIDIA H200 (143771 MiB, 140000 MiB free)\\n' ;;
  esac
  exit 0
fi
exit 2
""")
    script.chmod(0o755)
    return str(script), log


def test_image_id_and_launcher(tmp_path):
    cli, log = fake_docker(tmp_path)
    access = DockerAccess(cli=cli, host="unix:///run/test.sock")
    assert image_id(access, "llamafleet/llama-server:cpu") == IMAGE_ID
    env = {"LLAMA_ARG_CTX_SIZE": "4096", "CUDA_VISIBLE_DEVICES": "1", "PATH": "/x", "SECRET": "s"}
    launcher = image_launcher(access, "llamafleet/llama-server:cpu", env)
    assert launcher.identity == {
        "path": "image:llamafleet/llama-server:cpu",
        "image_id": IMAGE_ID,
        "env": {"CUDA_VISIBLE_DEVICES": "1", "LLAMA_ARG_CTX_SIZE": "4096"},
    }
    assert launcher.prefix == (
        cli, "run", "--rm", "--network", "none", "--log-driver", "none",
        "--env", "CUDA_VISIBLE_DEVICES=1", "--env", "LLAMA_ARG_CTX_SIZE=4096", IMAGE_ID,
    )
    assert launcher.env["DOCKER_HOST"] == "unix:///run/test.sock"
    assert "DOCKER_HOST=unix:///run/test.sock image inspect --format {{.Id}} llamafleet/llama-server:cpu" in (
        log.read_text()
    )


def test_help_from_the_image_is_cached_by_image_id(tmp_path):
    cli, log = fake_docker(tmp_path / "d")
    access = DockerAccess(cli=cli)
    cache = str(tmp_path / "cache")
    first = launcher_texts(image_launcher(access, "img:1", {}), cache, want_version=True)
    assert (first.help, first.runs) == (HELP, 2)
    assert "11434" in first.version
    second = launcher_texts(image_launcher(access, "img:1", {}), cache, want_version=True)
    assert (second.help, second.runs) == (HELP, 0)
    runs = [line for line in log.read_text().splitlines() if " run " in line]
    assert len(runs) == 2


def test_a_new_image_id_reads_the_help_again(tmp_path):
    cache = str(tmp_path / "cache")
    cli, _log = fake_docker(tmp_path / "a")
    assert launcher_texts(image_launcher(DockerAccess(cli=cli), "img:1", {}), cache, False).runs == 1
    cli, _log = fake_docker(tmp_path / "b", image_id_text="sha256:" + "cd" * 32)
    assert launcher_texts(image_launcher(DockerAccess(cli=cli), "img:1", {}), cache, False).runs == 1


def test_missing_image_is_an_unknown_engine(tmp_path):
    cli, log = fake_docker(tmp_path, image_id_text="")
    launcher = image_launcher(DockerAccess(cli=cli), "absent:1", {})
    assert launcher.identity is None
    texts = launcher_texts(launcher, str(tmp_path / "cache"), want_version=True)
    assert (texts.help, texts.version, texts.runs) == ("", "", 0)
    assert " run " not in log.read_text()


def test_unreachable_docker_is_an_unknown_engine(tmp_path):
    launcher = image_launcher(DockerAccess(cli=str(tmp_path / "no-docker")), "img:1", {})
    assert launcher.identity is None


def test_list_devices_through_the_image_with_gpus(tmp_path):
    cli, log = fake_docker(tmp_path)
    devices = launcher_devices(image_launcher(DockerAccess(cli=cli), "img:1", {}, gpus=True))
    assert [(d.id, d.total_mib) for d in devices] == [("CUDA0", 143771)]
    assert "run --rm --network none --log-driver none --gpus all" in log.read_text()


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, {}),
        ({"GGML_CUDA_GRAPH_OPT": "1", "HOME": "/root"}, {"GGML_CUDA_GRAPH_OPT": "1"}),
        ({"CUDA_DEVICE_ORDER": "PCI_BUS_ID", "LLAMA_API_KEY": "k"}, {"CUDA_DEVICE_ORDER": "PCI_BUS_ID"}),
    ],
)
def test_container_gets_only_the_engine_variables(env, expected):
    assert engine_variables(env) == expected


@pytest.mark.parametrize(
    ("text", "state"),
    [
        (f"{CONTAINER_ID} 4242\n", ContainerState(id=CONTAINER_ID, pid=4242)),
        (f"{CONTAINER_ID} 0", ContainerState(id=CONTAINER_ID, pid=0)),
        ("", ContainerState()),
        ("abc 12", ContainerState()),
        (f"{CONTAINER_ID} -1", ContainerState()),
        (f"{CONTAINER_ID} 1 2", ContainerState()),
    ],
)
def test_parse_container_state(text, state):
    assert parse_container_state(text) == state


def test_container_state(tmp_path):
    cli, log = fake_docker(tmp_path)
    assert container_state(DockerAccess(cli=cli), "llama-server-chat") == ContainerState(CONTAINER_ID, 4242)
    assert "container inspect --format {{.Id}} {{.State.Pid}} -- llama-server-chat" in log.read_text()
    assert container_state(DockerAccess(cli=cli), "") == ContainerState()
    missing, _log = fake_docker(tmp_path / "m", state="")
    assert container_state(DockerAccess(cli=missing), "x") == ContainerState()


@pytest.mark.parametrize(
    ("text", "container"),
    [
        (f"12:memory:/docker/{CONTAINER_ID}\n1:name=systemd:/docker/{CONTAINER_ID}\n", CONTAINER_ID),
        (f"0::/system.slice/docker-{CONTAINER_ID}.scope\n", CONTAINER_ID),
        ("0::/system.slice/llama-server-chat.service\n", ""),
        (f"0::/system.slice/libpod-{CONTAINER_ID}.scope\n", ""),
        ("", ""),
    ],
)
def test_parse_cgroup_container(text, container):
    assert parse_cgroup_container(text) == container


def test_describe_owner_names_the_container():
    owner = Owner(pid=7, comm="llama-server", container=CONTAINER_ID)
    assert describe_owner(owner) == "pid 7 (llama-server, container c0ffee000000)"


def _tree(root: Path, files: dict[str, str]) -> str:
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return str(root)


@pytest.mark.parametrize(
    ("files", "mib"),
    [
        (  # cgroup v1 (this machine's dockerd, cgroupfs driver): total_rss of the memory controller
            {"proc/4242/cgroup": f"9:memory:/docker/{CONTAINER_ID}\n0::/\n",
             f"sys/fs/cgroup/memory/docker/{CONTAINER_ID}/memory.stat": "cache 999\ntotal_rss 209715200\n"},
            200,
        ),
        (  # cgroup v2, systemd driver: anon
            {"proc/4242/cgroup": f"0::/system.slice/docker-{CONTAINER_ID}.scope\n",
             f"sys/fs/cgroup/system.slice/docker-{CONTAINER_ID}.scope/memory.stat": "anon 104857600\nfile 5\n"},
            100,
        ),
        ({"proc/4242/cgroup": "0::/../../etc\n"}, 0),
        ({"proc/4242/cgroup": f"0::/docker/{CONTAINER_ID}\n"}, 0),
        ({}, 0),
    ],
)
def test_process_memory_mib(tmp_path, files, mib):
    assert process_memory_mib(4242, _tree(tmp_path, files)) == mib


def test_process_memory_of_no_process():
    assert process_memory_mib(0) == 0
