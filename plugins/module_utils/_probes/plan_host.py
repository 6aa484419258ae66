"""Probe one host and plan its llama-server: the I/O half of llama_server_plan.

Everything that asks the world happens here, once, in the order of spec
section 1.1, and fills a HostFacts for the pure planner. The module itself
only translates Ansible options and results.
"""

from __future__ import annotations

import dataclasses
import os
import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ansible_collections.llamafleet.llamacpp.plugins.module_utils import planner
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner import capabilities
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.access import is_external
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.argv_tokens import arg_value, has_any_flag
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.engine_inputs import (
    KEY_VARIABLE,
    SYSTEM_CONFIG,
    environment_problem,
    names_to_unset,
    parse_show_environment,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.facts import CpuBudget, GGUFInfo, HostFacts
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.load_guard import (
    engine_vram_from_devices,
    load_guard_needs_devices,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.placement import DEVICE_FLAGS
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.preset_types import read_gpu_selection
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.recurrent_state import is_hybrid
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.switches import (
    SPEC_OFF,
    SPEC_UNREADABLE,
    spec_mode,
    split_mode_key,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.cpu import cpuset_threads
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.docker import (
    ContainerState,
    DockerAccess,
    container_state,
    image_launcher,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.engine import (
    EngineLauncher,
    PreflightResult,
    binary_launcher,
    cached_devices,
    engine_env,
    launcher_texts,
    parse_engine_build,
    run_command,
    run_preflight,
    trusted_build,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.gguf_header import (
    GGUFError,
    read_gguf_info,
    shard_family_size,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.gpu import (
    list_gpus,
    visible_gpu_count,
    visible_vram_mib,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.memory import (
    process_memory_mib,
    ram_facts,
    unit_memory_mib,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.model_paths import (
    ModelPathError,
    resolve_draft,
    resolve_main_model,
    resolve_mmproj,
    same_file,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes.port import port_conflict

# Environment groups of spec section 4.8 the planner reads from the service env.
_TRIMMED_ARG_ENV = frozenset(
    {"LLAMA_ARG_LOAD_MODE", "LLAMA_ARG_MLOCK", "LLAMA_ARG_NO_MMAP", "LLAMA_ARG_RPC", "LLAMA_ARG_CACHE_RAM"}
)
_USER_ENV = ("GGML_CUDA_GRAPH_OPT", "GGML_OP_OFFLOAD_MIN_BATCH", "GGML_CUDA_ALLREDUCE")

# Free RAM moves all the time; a reading this close to the previous one keeps it,
# so the plan (and the unit file it renders) does not flap between runs.
RAM_AVAIL_TOLERANCE = 0.10
RAM_AVAIL_MIN_TOLERANCE_MIB = 1024


class ProbeError(ValueError):
    """A failure the operator must fix (model or projector missing, bad preset)."""


@dataclass
class ProbeOptions:
    preset: dict[str, str]
    bin: str = ""
    home: str = "/var/lib/llamafleet"
    model_dirs: Sequence[str] = ()
    environment: Mapping[str, str] = field(default_factory=dict)
    api_key_file: str = ""
    engine_official: bool = False
    instance: str = ""
    unit: str = ""
    slot_dir: str = ""
    cache_dir: str = ""
    write_cache: bool = True
    stable_ram_avail_mib: int = 0
    spec_auto_blocked: str = ""
    root: str = "/"
    # Compose runtime: the engine is this image's entrypoint, and this container runs the instance.
    engine_image: str = ""
    container: str = ""
    docker: DockerAccess = field(default_factory=DockerAccess)
    # Run the planned command line through the engine's own parser (probe_engine.run_preflight).
    preflight: bool = True
    # Asked for the variables the systemd manager passes to every unit (systemd runtime only).
    systemctl: str = "systemctl"


@dataclass
class ProbeResult:
    facts: HostFacts
    plan: planner.Plan
    probed: dict
    warnings: list[str] = field(default_factory=list)
    engine_runs: int = 0
    port_conflict: str = ""
    container: ContainerState = field(default_factory=ContainerState)
    preflight: PreflightResult | None = None  # None: not run (external preset, or switched off)
    # Engine variables the systemd manager would hand the unit and the plan did not set: the unit unsets them.
    unset_environment: list[str] = field(default_factory=list)


def arg_env_from(service_env: Mapping[str, str]) -> dict[str, str]:
    """LLAMA_ARG_* the engine will inherit (spec 4.8): non-empty values only."""
    out: dict[str, str] = {}
    for key, raw in service_env.items():
        if not key.startswith("LLAMA_ARG_"):
            continue
        if key == "LLAMA_ARG_NO_KV_OFFLOAD":
            out[key] = raw or "1"  # present, even empty, means "no offload"
            continue
        value = raw.strip() if key in _TRIMMED_ARG_ENV else raw
        if value:
            out[key] = value
    return out


def user_env_from(service_env: Mapping[str, str]) -> dict[str, str]:
    return {k: service_env[k] for k in _USER_ENV if service_env.get(k, "")}


def stable_ram_avail(measured: int, previous: int, total: int) -> int:
    """Keep the previous free-RAM reading while the new one stays close to it."""
    if previous <= 0 or measured <= 0:
        return measured
    tolerance = max(int(total * RAM_AVAIL_TOLERANCE), RAM_AVAIL_MIN_TOLERANCE_MIB)
    return previous if abs(measured - previous) <= tolerance else measured


def resolve_bin(options: ProbeOptions) -> str:
    binary = options.bin or options.preset.get("BIN", "").strip()
    if not binary:
        raise ProbeError("BIN not defined: set the bin option or BIN in the preset")
    if not binary.startswith("/"):
        binary = posixpath.join(options.home, binary)
    return posixpath.normpath(binary)


def _gpu_selection(preset: Mapping[str, str], service_env: Mapping[str, str]) -> tuple[str, bool]:
    """CUDA_VISIBLE_DEVICES the engine will see, and whether indices follow PCI order."""
    if preset.get("CUDA_VISIBLE_DEVICES", ""):
        return preset["CUDA_VISIBLE_DEVICES"], True
    return service_env.get("CUDA_VISIBLE_DEVICES", ""), service_env.get("CUDA_DEVICE_ORDER", "") == "PCI_BUS_ID"


def _typed_gpu_selection(preset: dict[str, str]) -> dict[str, str]:
    """The preset with CUDA_VISIBLE_DEVICES typed before anything runs the engine with it (PlanError if bad)."""
    raw = preset.get("CUDA_VISIBLE_DEVICES", "").strip()
    if not raw:
        return preset
    return {**preset, "CUDA_VISIBLE_DEVICES": read_gpu_selection(raw)[0]}


def _read_gguf(path: str, warnings: list[str], what: str, options: ProbeOptions | None = None) -> GGUFInfo | None:
    try:
        if options is None:
            return read_gguf_info(path)
        return read_gguf_info(path, cache_dir=options.cache_dir, write_cache=options.write_cache)
    except GGUFError as err:
        warnings.append(f"{what} {path}: GGUF metadata unreadable ({err}); rules that need it keep engine defaults")
        return None


def probe_and_plan(options: ProbeOptions) -> ProbeResult:
    """Run the probes of spec section 4 and plan; raises ProbeError or planner.PlanError."""
    preset = dict(options.preset)
    warnings: list[str] = []
    if is_external(preset):
        result_plan = planner.plan(preset, HostFacts())
        return ProbeResult(facts=HostFacts(), plan=result_plan, probed={"external": True}, warnings=warnings)

    service_env = dict(options.environment)
    bad_name, why = environment_problem(service_env)
    if bad_name:
        raise planner.PlanError(f"environment variable {bad_name!r} {why}", key=bad_name)
    binary = resolve_bin(options)
    try:
        model = resolve_main_model(preset.get("MODEL", ""), options.home, options.model_dirs)
        mmproj = ""
        if preset.get("MMPROJ", "").strip():
            mmproj = resolve_mmproj(preset["MMPROJ"], options.home, options.model_dirs)
    except ModelPathError as err:
        raise ProbeError(str(err)) from err

    extra = planner.split_args(preset.get("EXTRA_ARGS", ""))
    typed_gpus = _typed_gpu_selection(preset)
    cvd, pci_order = _gpu_selection(typed_gpus, service_env)
    run_env = dict(service_env)
    if typed_gpus.get("CUDA_VISIBLE_DEVICES", ""):
        # Applied before anything asks the engine (spec 1.1 step 7).
        run_env["CUDA_VISIBLE_DEVICES"] = cvd
        run_env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
    env = engine_env(binary, run_env)
    arg_env = arg_env_from(service_env)
    # --help is read without the service's LLAMA_ARG_*: llama.cpp applies them before printing its usage, so a
    # bad one would make it print an error instead; the planner checks them against the help (flag_table).
    help_env = {k: v for k, v in run_env.items() if not k.startswith("LLAMA_ARG_")}
    launcher = _launcher(options, binary, engine_env(binary, help_env), help_env, gpus=False)

    gguf = _read_gguf(model, warnings, "model", options)
    model_bytes = shard_family_size(posixpath.dirname(model), posixpath.basename(model))
    mode = spec_mode(preset)
    want_version = is_hybrid(gguf) or mode == "auto"
    cache_dir = options.cache_dir or posixpath.join(options.home, ".cache")
    texts = launcher_texts(launcher, cache_dir, want_version=want_version, write=options.write_cache)
    help_text = texts.help
    if not help_text:
        what = f"image {options.engine_image}" if options.engine_image else binary
        warnings.append(
            f"{what} --help gave nothing (missing binary, image or libraries?): planning for an unknown engine, "
            "with the oldest safe form of every flag"
        )

    cpu: CpuBudget | None = None
    if "LLAMA_ARG_THREADS" not in service_env:
        cpu = cpuset_threads(options.root)

    device_pinned = has_any_flag(extra, *DEVICE_FLAGS) or bool(arg_env.get("LLAMA_ARG_DEVICE", ""))
    gpus_list, gpu_source = list_gpus()
    vram = 0 if device_pinned else visible_vram_mib(gpus_list or [], cvd, pci_order) if gpus_list else 0
    launch_queues = service_env.get("CUDA_SCALE_LAUNCH_QUEUES", "")
    gpu_count = 0
    if not (
        launch_queues
        or preset.get("CUDA_LAUNCH_QUEUES", "").strip().lower() == "off"
        or device_pinned
    ):
        gpu_count = visible_gpu_count(cvd, gpus_list or [])

    ram_mib, ram_avail = ram_facts(options.root)
    own_container = container_state(options.docker, options.container) if options.container else ContainerState()
    if options.container:
        own_mib = process_memory_mib(own_container.pid, options.root)
    else:
        own_mib = unit_memory_mib(options.unit, options.root) if options.unit else 0
    measured_avail = min(ram_avail + own_mib, ram_mib) if ram_mib else ram_avail
    ram_avail_used = stable_ram_avail(measured_avail, options.stable_ram_avail_mib, ram_mib)

    slot_dir = ""
    if capabilities.supports_slot_save_path(help_text) and not has_any_flag(extra, "--slot-save-path"):
        slot_dir = options.slot_dir or posixpath.join(options.home, "slots")

    engine_build = 0
    if want_version:
        engine_build = trusted_build(parse_engine_build(texts.version), options.engine_official)

    draft = draft_err = ""
    draft_gguf = None
    draft_is_model = False
    if mode not in (SPEC_OFF, SPEC_UNREADABLE) and preset.get("MODEL_DRAFT", "").strip():
        draft, draft_err = resolve_draft(preset["MODEL_DRAFT"], options.home, options.model_dirs)
        if draft:
            draft_is_model = same_file(draft, model)
            draft_gguf = _read_gguf(draft, warnings, "MODEL_DRAFT", options)

    # The engine's device list: for a tensor split, and to check the device and buffer names a preset gives.
    split_devs: tuple = ()
    engine_devices = None
    device_runs = 0
    tensor_split = split_mode_key(preset) == "tensor" and capabilities.supports_tensor_split_mode(help_text)
    if help_text and (tensor_split or names_devices(extra, arg_env)):
        listed = cached_devices(
            _launcher(options, binary, env, run_env, gpus=bool(gpus_list)), cache_dir, options.write_cache
        )
        device_runs = listed.runs
        if listed.devices is not None:
            engine_devices = tuple(d.id for d in listed.devices)
            split_devs = listed.devices if tensor_split else ()

    mmproj_bytes = 0
    if mmproj:
        try:
            mmproj_bytes = os.stat(mmproj).st_size
        except OSError:
            mmproj_bytes = 0

    facts = HostFacts(
        help=help_text, bin=binary, model=model, mmproj=mmproj, api_key_file=options.api_key_file, cpu=cpu,
        launch_queues=launch_queues, gpus=gpu_count, arg_env=arg_env, user_env=user_env_from(service_env),
        gguf=gguf, model_bytes=model_bytes, ram_mib=ram_mib, ram_avail_mib=ram_avail_used, vram_mib=vram,
        slot_dir=slot_dir, engine_build=engine_build, draft=draft, draft_err=draft_err, draft_gguf=draft_gguf,
        draft_is_model=draft_is_model, spec_auto_blocked=options.spec_auto_blocked, split_devs=split_devs,
        mmproj_bytes=mmproj_bytes, engine_devices=engine_devices,
    )
    result_plan = planner.plan(preset, facts)
    if load_guard_needs_devices(preset, result_plan.argv, facts):
        listed = cached_devices(
            _launcher(options, binary, env, run_env, gpus=bool(gpus_list)), cache_dir, options.write_cache
        )
        device_runs += listed.runs
        devices = split_devs or listed.devices or ()
        facts = dataclasses.replace(facts, engine_vram_mib=engine_vram_from_devices(devices))
        if facts.engine_vram_mib:
            result_plan = planner.plan(preset, facts)

    probed = {
        "bin": binary,
        "model": model,
        "mmproj": mmproj,
        "model_bytes": model_bytes,
        "gguf": dataclasses.asdict(gguf) if gguf else None,
        "engine_help_lines": len(help_text.splitlines()),
        "engine_build": engine_build,
        "engine_runs": texts.runs,
        "cpu_budget": dataclasses.asdict(cpu) if cpu else None,
        "gpu_source": gpu_source,
        "gpus": [dataclasses.asdict(g) for g in gpus_list or []],
        "gpu_count": gpu_count,
        "vram_mib": vram,
        "ram_mib": ram_mib,
        "ram_avail_mib": ram_avail_used,
        "ram_avail_measured_mib": measured_avail,
        "own_service_mib": own_mib,
        "engine_image": options.engine_image,
        "engine_image_id": (launcher.identity or {}).get("image_id", ""),
        "container_id": own_container.id,
        "slot_dir": slot_dir,
        "split_devs": [dataclasses.asdict(d) for d in split_devs],
        "engine_vram_mib": facts.engine_vram_mib,
        "draft": draft,
        "draft_err": draft_err,
        "draft_is_model": draft_is_model,
    }
    unset: list[str] = []
    if options.unit and not options.engine_image:
        kept = [*service_env, *result_plan.env, *([KEY_VARIABLE] if result_plan.api_key_via_env else [])]
        unset = names_to_unset(manager_environment(options.systemctl), kept)
        probed["manager_engine_variables"] = unset
    preflight = None
    if options.preflight:
        preflight = _preflight(options, binary, service_env, result_plan, cache_dir)
        probed["preflight"] = preflight.as_dict()
        if preflight.system_config:
            warnings.append(
                f"{SYSTEM_CONFIG} exists on this host: llama.cpp would apply it to every engine; the service "
                + ("and the preflight do not read it" if preflight.system_config == "hidden"
                   else "does not read it, but the preflight could not hide it (not root, or no unshare)")
            )
    return ProbeResult(
        facts=facts, plan=result_plan, probed=probed, warnings=warnings,
        engine_runs=texts.runs + device_runs + (preflight.runs if preflight else 0), container=own_container,
        preflight=preflight, unset_environment=unset,
    )


MANAGER_TIMEOUT_S = 5.0
# What names devices or buffer types, in EXTRA_ARGS or the service environment.
_DEVICE_NAMING_FLAGS = (
    "-dev", "--device", "-devd", "--device-draft", "--spec-draft-device", "-mmdev", "--mmproj-device",
    "-ot", "--override-tensor", "-otd", "--override-tensor-draft", "--spec-draft-override-tensor",
)  # fmt: skip
_DEVICE_NAMING_ENV = ("LLAMA_ARG_DEVICE", "LLAMA_ARG_OVERRIDE_TENSOR", "MTMD_BACKEND_DEVICE")


def names_devices(extra: Sequence[str], arg_env: Mapping[str, str]) -> bool:
    return has_any_flag(extra, *_DEVICE_NAMING_FLAGS) or any(arg_env.get(k, "") for k in _DEVICE_NAMING_ENV)


def manager_environment(systemctl: str) -> dict[str, str]:
    """What the systemd manager passes to every unit (``systemctl show-environment``); {} when it cannot say."""
    rc, out = run_command([systemctl, "show-environment"], (), {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"},
                          MANAGER_TIMEOUT_S)
    return parse_show_environment(out) if rc == 0 else {}


def _preflight(
    options: ProbeOptions, binary: str, service_env: Mapping[str, str], plan: planner.Plan, cache_dir: str
) -> PreflightResult:
    """The planned argv through the engine's parser, in the environment the service will have."""
    launch_env = {**service_env, **plan.env}
    if options.engine_image:
        launcher = image_launcher(options.docker, options.engine_image, launch_env, no_config=True)
    else:
        launcher = binary_launcher(binary, engine_env(binary, launch_env))
    return run_preflight(
        launcher,
        plan.argv,
        plan.decisions.preflight_swaps,
        cache_dir=cache_dir,
        write=options.write_cache,
        root=options.root,
        in_image=bool(options.engine_image),
    )


def _launcher(
    options: ProbeOptions, binary: str, env: Mapping[str, str], run_env: Mapping[str, str], gpus: bool
) -> EngineLauncher:
    """The binary itself, or in the compose runtime the image that will run (its entrypoint is the engine)."""
    if options.engine_image:
        return image_launcher(options.docker, options.engine_image, run_env, gpus=gpus)
    return binary_launcher(binary, env)


def check_port(plan: planner.Plan, own_unit: str, root: str = "/", own_container: str = "") -> str:
    """Spec 17 adapted: a foreign listener on the planned port, named; "" when free or ours."""
    port_text = arg_value(plan.argv, "--port")
    host = arg_value(plan.argv, "--host")
    if not port_text.isdigit():
        return ""
    return port_conflict(int(port_text), host, own_unit, root, own_container=own_container)
