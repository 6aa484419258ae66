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
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.access import is_external
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.engine_inputs import (
    KEY_VARIABLE,
    SYSTEM_CONFIG,
    environment_problem,
    names_to_unset,
    parse_show_environment,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.facts import CpuBudget, GGUFInfo, HostFacts
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.host_view import (
    HostView,
    host_view,
    names_devices,
    needs_draft,
    needs_engine_build,
    splits_tensors,
    stable_ram_avail,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._planner.load_guard import (
    engine_vram_from_devices,
    load_guard_needs_devices,
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
    EngineTexts,
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


def resolve_bin(options: ProbeOptions) -> str:
    binary = options.bin or options.preset.get("BIN", "").strip()
    if not binary:
        raise ProbeError("BIN not defined: set the bin option or BIN in the preset")
    if not binary.startswith("/"):
        binary = posixpath.join(options.home, binary)
    return posixpath.normpath(binary)


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
    if is_external(preset):
        return ProbeResult(facts=HostFacts(), plan=planner.plan(preset, HostFacts()), probed={"external": True})
    service_env = dict(options.environment)
    bad_name, why = environment_problem(service_env)
    if bad_name:
        raise planner.PlanError(f"environment variable {bad_name!r} {why}", key=bad_name)
    view = host_view(preset, service_env)
    readings = _Readings(options=options, view=view, binary=resolve_bin(options))
    _read_models(readings, preset)
    _read_engine(readings, preset)
    _read_host(readings)
    _read_draft(readings, preset)
    _read_devices(readings, preset)
    facts = readings.facts()
    result_plan = planner.plan(preset, facts)
    if load_guard_needs_devices(preset, result_plan.argv, facts):
        listed = cached_devices(readings.launcher(gpus=bool(readings.gpus)), readings.cache_dir, options.write_cache)
        readings.device_runs += listed.runs
        facts = dataclasses.replace(facts, engine_vram_mib=engine_vram_from_devices(
            readings.split_devs or listed.devices or ()))
        if facts.engine_vram_mib:
            result_plan = planner.plan(preset, facts)
    probed = readings.probed(facts)
    unset: list[str] = []
    if options.unit and not options.engine_image:
        kept = [*service_env, *result_plan.env, *([KEY_VARIABLE] if result_plan.api_key_via_env else [])]
        unset = names_to_unset(manager_environment(options.systemctl), kept)
        probed["manager_engine_variables"] = unset
    preflight = None
    if options.preflight:
        preflight = _preflight(options, readings.binary, service_env, result_plan, readings.cache_dir)
        probed["preflight"] = preflight.as_dict()
        readings.note_system_config(preflight)
    return ProbeResult(
        facts=facts, plan=result_plan, probed=probed, warnings=readings.warnings,
        engine_runs=readings.texts.runs + readings.device_runs + (preflight.runs if preflight else 0),
        container=readings.own_container, preflight=preflight, unset_environment=unset,
    )


@dataclass
class _Readings:
    """What the probes saw, step by step, for one plan."""

    options: ProbeOptions
    view: HostView
    binary: str
    warnings: list[str] = field(default_factory=list)
    model: str = ""
    mmproj: str = ""
    mmproj_bytes: int = 0
    model_bytes: int = 0
    gguf: GGUFInfo | None = None
    texts: EngineTexts = field(default_factory=EngineTexts)
    image_id: str = ""
    engine_build: int = 0
    cpu: CpuBudget | None = None
    gpus: list = field(default_factory=list)
    gpu_source: str = ""
    vram_mib: int = 0
    gpu_count: int = 0
    ram_mib: int = 0
    ram_avail_mib: int = 0
    measured_avail_mib: int = 0
    own_mib: int = 0
    own_container: ContainerState = field(default_factory=ContainerState)
    draft: str = ""
    draft_err: str = ""
    draft_gguf: GGUFInfo | None = None
    draft_is_model: bool = False
    split_devs: tuple = ()
    engine_devices: tuple[str, ...] | None = None
    device_runs: int = 0

    @property
    def cache_dir(self) -> str:
        return self.options.cache_dir or posixpath.join(self.options.home, ".cache")

    @property
    def help_text(self) -> str:
        return self.texts.help

    def launcher(self, gpus: bool, env_of=None) -> EngineLauncher:
        """The engine as the probes run it: the service's environment with the plan's GPU selection."""
        run_env = dict(self.view.engine_env if env_of is None else env_of)
        return _launcher(self.options, self.binary, engine_env(self.binary, run_env), run_env, gpus=gpus)

    def read_gguf(self, path: str, what: str) -> GGUFInfo | None:
        try:
            return read_gguf_info(path, cache_dir=self.options.cache_dir, write_cache=self.options.write_cache)
        except GGUFError as err:
            self.warnings.append(f"{what} {path}: GGUF metadata unreadable ({err}); rules that need it keep engine "
                                 "defaults")
            return None

    def note_system_config(self, preflight: PreflightResult) -> None:
        if preflight.system_config:
            self.warnings.append(
                f"{SYSTEM_CONFIG} exists on this host: llama.cpp would apply it to every engine; the service "
                + ("and the preflight do not read it" if preflight.system_config == "hidden"
                   else "does not read it, but the preflight could not hide it (not root, or no unshare)")
            )

    def facts(self) -> HostFacts:
        options, view = self.options, self.view
        return HostFacts(
            help=self.help_text, bin=self.binary, model=self.model, mmproj=self.mmproj,
            api_key_file=options.api_key_file, cpu=self.cpu, launch_queues=view.launch_queues, gpus=self.gpu_count,
            arg_env=dict(view.arg_env), user_env=dict(view.user_env), gguf=self.gguf, model_bytes=self.model_bytes,
            ram_mib=self.ram_mib, ram_avail_mib=self.ram_avail_mib, vram_mib=self.vram_mib,
            # Where slots would go; the planner decides whether the engine gets --slot-save-path at all.
            slot_dir=options.slot_dir or posixpath.join(options.home, "slots"), engine_build=self.engine_build,
            draft=self.draft, draft_err=self.draft_err, draft_gguf=self.draft_gguf,
            draft_is_model=self.draft_is_model, spec_auto_blocked=options.spec_auto_blocked,
            split_devs=self.split_devs, mmproj_bytes=self.mmproj_bytes, engine_devices=self.engine_devices,
        )

    def probed(self, facts: HostFacts) -> dict:
        return {
            "bin": self.binary, "model": self.model, "mmproj": self.mmproj, "model_bytes": self.model_bytes,
            "gguf": dataclasses.asdict(self.gguf) if self.gguf else None,
            "engine_help_lines": len(self.help_text.splitlines()), "engine_build": self.engine_build,
            "engine_runs": self.texts.runs, "cpu_budget": dataclasses.asdict(self.cpu) if self.cpu else None,
            "gpu_source": self.gpu_source, "gpus": [dataclasses.asdict(g) for g in self.gpus],
            "gpu_count": self.gpu_count, "vram_mib": self.vram_mib, "ram_mib": self.ram_mib,
            "ram_avail_mib": self.ram_avail_mib, "ram_avail_measured_mib": self.measured_avail_mib,
            "own_service_mib": self.own_mib, "engine_image": self.options.engine_image,
            "engine_image_id": self.image_id, "container_id": self.own_container.id,
            "slot_dir": facts.slot_dir, "split_devs": [dataclasses.asdict(d) for d in self.split_devs],
            "engine_vram_mib": facts.engine_vram_mib, "draft": self.draft, "draft_err": self.draft_err,
            "draft_is_model": self.draft_is_model,
        }


def _read_models(readings: _Readings, preset: Mapping[str, str]) -> None:
    """The model and projector files, and the model's GGUF header."""
    options = readings.options
    try:
        readings.model = resolve_main_model(preset.get("MODEL", ""), options.home, options.model_dirs)
        if preset.get("MMPROJ", "").strip():
            readings.mmproj = resolve_mmproj(preset["MMPROJ"], options.home, options.model_dirs)
    except ModelPathError as err:
        raise ProbeError(str(err)) from err
    readings.gguf = readings.read_gguf(readings.model, "model")
    readings.model_bytes = shard_family_size(posixpath.dirname(readings.model), posixpath.basename(readings.model))
    if readings.mmproj:
        try:
            readings.mmproj_bytes = os.stat(readings.mmproj).st_size
        except OSError:
            readings.mmproj_bytes = 0


def _read_engine(readings: _Readings, preset: Mapping[str, str]) -> None:
    """The engine's --help (and --version when its build matters), cached by the engine's identity.

    --help is read without the service's LLAMA_ARG_*: llama.cpp applies them before printing its usage, so a bad
    one would make it print an error instead; the planner checks them against the help (flag_table).
    """
    options = readings.options
    help_env = {k: v for k, v in readings.view.engine_env.items() if not k.startswith("LLAMA_ARG_")}
    want_version = needs_engine_build(preset, readings.gguf)
    launcher = readings.launcher(gpus=False, env_of=help_env)
    readings.image_id = (launcher.identity or {}).get("image_id", "")
    readings.texts = launcher_texts(launcher, readings.cache_dir, want_version=want_version,
                                    write=options.write_cache)
    if not readings.help_text:
        what = f"image {options.engine_image}" if options.engine_image else readings.binary
        readings.warnings.append(
            f"{what} --help gave nothing (missing binary, image or libraries?): planning for an unknown engine, "
            "with the oldest safe form of every flag"
        )
    if want_version:
        readings.engine_build = trusted_build(parse_engine_build(readings.texts.version), options.engine_official)


def _read_host(readings: _Readings) -> None:
    """CPU budget, GPUs and their memory as the engine will see them, RAM less what this instance holds itself."""
    options, view = readings.options, readings.view
    if view.probe_cpu:
        readings.cpu = cpuset_threads(options.root)
    gpus, readings.gpu_source = list_gpus()
    readings.gpus = gpus or []
    if readings.gpus and not view.device_pinned:
        readings.vram_mib = visible_vram_mib(readings.gpus, view.visible, view.pci_order)
    if view.count_gpus:
        readings.gpu_count = visible_gpu_count(view.visible, readings.gpus)
    ram_mib, ram_avail = ram_facts(options.root)
    if options.container:
        readings.own_container = container_state(options.docker, options.container)
        readings.own_mib = process_memory_mib(readings.own_container.pid, options.root)
    elif options.unit:
        readings.own_mib = unit_memory_mib(options.unit, options.root)
    measured = min(ram_avail + readings.own_mib, ram_mib) if ram_mib else ram_avail
    readings.ram_mib, readings.measured_avail_mib = ram_mib, measured
    readings.ram_avail_mib = stable_ram_avail(measured, options.stable_ram_avail_mib, ram_mib)


def _read_draft(readings: _Readings, preset: Mapping[str, str]) -> None:
    if not needs_draft(preset):
        return
    options = readings.options
    readings.draft, readings.draft_err = resolve_draft(preset["MODEL_DRAFT"], options.home, options.model_dirs)
    if readings.draft:
        readings.draft_is_model = same_file(readings.draft, readings.model)
        readings.draft_gguf = readings.read_gguf(readings.draft, "MODEL_DRAFT")


def _read_devices(readings: _Readings, preset: Mapping[str, str]) -> None:
    """The engine's device list: for a tensor split, and to check the device and buffer names a preset gives."""
    tensor_split = splits_tensors(preset, readings.help_text)
    if not readings.help_text or not (tensor_split or names_devices(readings.view.extra, readings.view.arg_env)):
        return
    listed = cached_devices(readings.launcher(gpus=bool(readings.gpus)), readings.cache_dir,
                            readings.options.write_cache)
    readings.device_runs = listed.runs
    if listed.devices is not None:
        readings.engine_devices = tuple(d.id for d in listed.devices)
        readings.split_devs = listed.devices if tensor_split else ()


MANAGER_TIMEOUT_S = 5.0


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
    """Spec 17 adapted: a foreign listener where the plan listens (its decisions), named; "" when free or ours."""
    port_text = plan.decisions.port
    if not port_text.isdigit():
        return ""
    return port_conflict(int(port_text), plan.decisions.host, own_unit, root, own_container=own_container)
