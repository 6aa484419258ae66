#!/usr/bin/python
# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: llama_server_plan
short_description: Probe a host and plan its llama-server command line
version_added: "0.1.0"
description:
  - Reads this host once (the engine's C(--help) and C(--version), the model's GGUF metadata, C(/proc/meminfo),
    cgroup v1/v2 memory and CPU limits, the cpuset, NVIDIA GPUs through NVML or C(nvidia-smi), who holds the
    planned TCP port) and plans the exact C(llama-server) invocation for a preset, following the serve-planning
    rules of Loki.
  - Returns the argv, the environment, and notes that explain every choice. It never changes the host; the
    C(llamafleet.llamacpp.llama_server) role renders the service from this result.
  - The engine's C(--help)/C(--version) texts are cached on disk under O(cache_dir), keyed by the binary's
    identity (path, size, mtime, inode), so a second run on an unchanged host does not execute the engine.
  - An API key never appears in the result. With O(api_key_file) the engine reads its key from that file
    (C(--api-key-file)); an engine without that flag gets it from C(LLAMA_API_KEY), which the role passes
    through a root-only environment file (RV(api_key_via_env)).
author:
  - llamafleet maintainers (@llamafleet)
extends_documentation_fragment:
  - llamafleet.llamacpp.attributes
  - llamafleet.llamacpp.attributes.action
options:
  preset:
    description:
      - The preset as a mapping of Loki keys (C(CTX), C(NGL), C(EXTRA_ARGS), ...) to values. Keys are
        case-insensitive. YAML booleans become C(on)/C(off), null becomes empty; lists and mappings are refused.
      - Applied over O(preset_file) when both are given.
      - Its C(API_KEY) never reaches the host in this option, nor C(EXTERNAL_KEY). The controller side of the
        module moves the key into O(api_key) and drops C(EXTERNAL_KEY), a remote API's key never read at launch.
    type: dict
    default: {}
  api_key:
    description:
      - The API key the engine will be protected by (its C(API_KEY)), over the preset's; masked in every result
        and log. The planner only needs to know there is one; the key itself never enters the plan.
    type: str
    default: ""
  preset_file:
    description:
      - Path, on the target, of a Loki C(config.env) preset (C(KEY=value) lines). Lets Loki presets be used
        unchanged.
    type: path
  bin:
    description:
      - Path of the C(llama-server) binary. Overrides the preset's C(BIN). A relative path is taken under O(home).
    type: path
  home:
    description:
      - Instance home directory. Relative model names are searched in C(<home>/models) first; the slot
        directory defaults to C(<home>/slots); the engine cache to C(<home>/.cache).
    type: path
    default: /var/lib/llamafleet
  model_dirs:
    description:
      - Further directories searched for C(MODEL), C(MMPROJ) and C(MODEL_DRAFT) file names, in order.
      - An absolute model path inside one of them is accepted as is.
    type: list
    elements: path
    default: []
  environment:
    description:
      - The environment the service will run with (what the role writes into the unit). The planner reads its
        C(LLAMA_ARG_*), C(GGML_*), C(CUDA_VISIBLE_DEVICES) and C(CUDA_SCALE_LAUNCH_QUEUES) entries; the module's
        own process environment is never used.
    type: dict
    default: {}
  api_key_file:
    description:
      - Path from which the engine will read its API key (for example C(/run/credentials/<unit>/api_key)).
        Non-empty means a key is in effect. The key itself is never given to this module.
    type: str
    default: ""
  engine_official:
    description:
      - Whether the binary is an official ggml-org release build. Only then is its build number trusted
        (and only from build 5000), which enables build-dependent advice and C(SPEC=auto).
    type: bool
    default: false
  instance:
    description:
      - Instance name; the service unit is C(llama-server-<instance>.service) unless O(unit) says otherwise.
    type: str
    default: ""
  unit:
    description:
      - The systemd unit that runs this instance. Its own memory is added back to free RAM and its own
        listening socket is not a port conflict, so a running instance plans the same as a stopped one.
    type: str
    default: ""
  slot_dir:
    description:
      - Directory for C(--slot-save-path) (created and emptied by the service at start, not by this module).
    type: path
  cache_dir:
    description:
      - Where the engine's help and version texts are cached. Default C(<home>/.cache). Not written in check mode.
    type: path
  stable_ram_avail_mib:
    description:
      - Free RAM (MiB) used by the previous plan. When the new reading is within 10% of total RAM (at least
        1 GiB) of it, the previous value is kept so that plans do not flap with the page cache.
    type: int
    default: 0
  state_file:
    description:
      - The planning state a verified deployment left (a JSON file written by
        C(llamafleet.llamacpp.llama_server_apply)). Its C(ram_avail_mib) is used as O(stable_ram_avail_mib) when
        that is not given. A missing or unreadable file means a first deployment.
    type: path
  spec_auto_blocked:
    description:
      - Reason a previous C(SPEC=auto) launch with this configuration never became healthy; blocks C(SPEC=auto).
    type: str
    default: ""
  check_port:
    description:
      - Fail when another process (not this instance's unit) listens on the planned port, naming it.
    type: bool
    default: true
  fail_on_refusal:
    description:
      - Fail when the RAM load guard refuses the launch (the engine would not fit). With V(false) the refusal is
        returned in RV(refusal) only.
    type: bool
    default: true
  engine_image:
    description:
      - Docker image whose entrypoint is C(llama-server) (the role's compose runtime). The engine's C(--help) and
        C(--version) are then read by running the image (C(docker run --rm --network none IMAGE --help)), so the
        plan matches the engine that will serve; the cache is keyed by the image ID.
      - O(bin) is then the binary's path inside the image (default C(/app/llama-server), as in ggml-org's images).
    type: str
    default: ""
  container:
    description:
      - Name of the Docker container that runs this instance (compose runtime). Its memory is added back to free
        RAM and its listening socket is not a port conflict, as O(unit) does for a systemd unit.
    type: str
    default: ""
  docker_cli:
    description:
      - The docker CLI used with O(engine_image) and O(container).
    type: str
    default: docker
  docker_host:
    description:
      - The Docker daemon to ask (C(DOCKER_HOST), for example C(unix:///run/docker.sock)). Default the CLI's own.
    type: str
    default: ""
  preflight:
    description:
      - Run the planned command line through the engine's own argument parser before returning it. The engine
        is started with C(--help) first, the planned arguments after it, and the service's environment. It
        parses every argument with its own handlers, runs its post-parse checks, prints its usage and exits 0
        without loading the model; a bad argument makes it exit 1 with its own error, which fails this task
        quoting it. Paths that exist only in the running service (its key file, its slot directory) get
        stand-ins; the real key is never used. No llama.cpp C(config.ini) takes part (C(XDG_CONFIG_HOME) and
        C(HOME) point to an empty directory, C(/etc/llama.cpp) is hidden in a private mount namespace when
        running as root).
      - A pass is cached under O(cache_dir), keyed by the engine's identity, the command line and the
        environment, so an unchanged re-run starts the engine 0 times. Runs in check mode too (without
        writing the cache). With O(engine_image) the preflight runs inside the image.
      - Never run with O(host_facts).
    type: bool
    default: true
  host_facts:
    description:
      - Plan from these facts instead of probing (previews, tests). Keys are the fields of the planner's
        C(HostFacts) (C(help), C(bin), C(model), C(gguf), C(vram_mib), ...).
    type: dict
notes:
  - Requires the Python packages C(gguf) (GGUF metadata) on the target; C(nvidia-ml-py) is used for NVIDIA GPUs
    when present, C(nvidia-smi) otherwise; without either the host is planned as GPU-less (unknown VRAM).
requirements:
  - gguf
seealso:
  - module: llamafleet.llamacpp.gguf_info
attributes:
  check_mode:
    details: The module never changes the host; in check mode it does not write its engine-text cache either.
"""

EXAMPLES = r"""
- name: Plan a preset on this host
  llamafleet.llamacpp.llama_server_plan:
    bin: /opt/llama.cpp/b11434/bin/llama-server
    home: /var/lib/llamafleet/main
    model_dirs: [/srv/models]
    instance: main
    preset:
      MODEL: Qwen3-30B-A3B-Q4_K_M.gguf
      CTX: 65536
      NGL: auto
      REASONING: "on"
      EXTRA_ARGS: --jinja
    api_key_file: /run/credentials/llama-server-main.service/api_key
  register: plan

- name: Use a Loki config.env as it is
  llamafleet.llamacpp.llama_server_plan:
    preset_file: /etc/loki/config.env
    home: /var/lib/llamafleet/loki

- name: Plan for the engine inside an image (the compose runtime), with its running container as its own
  llamafleet.llamacpp.llama_server_plan:
    engine_image: ghcr.io/ggml-org/llama.cpp:server-cuda
    container: llama-server-main
    home: /var/lib/llamafleet/instances/main
    model_dirs: [/var/lib/llamafleet/models]
    preset: {MODEL: Qwen3-30B-A3B-Q4_K_M.gguf, HOST: 0.0.0.0, PORT: 8080}
    api_key_file: /run/secrets/llama-api-key

- name: Preview without probing
  llamafleet.llamacpp.llama_server_plan:
    preset: {CTX: 8192}
    host_facts:
      bin: /usr/bin/llama-server
      model: /srv/models/m.gguf
      vram_mib: 24576
"""

RETURN = r"""
argv:
  description: The planned command line, binary first, EXTRA_ARGS last. Empty for an external preset.
  returned: always
  type: list
  elements: str
  sample: [/opt/llama/bin/llama-server, -m, /srv/models/m.gguf, -c, "32768", -b, "2048"]
exec_start:
  description: The argv quoted for a systemd C(ExecStart=) line.
  returned: always
  type: str
env:
  description: Environment variables the plan sets (GPU selection, CUDA knobs).
  returned: always
  type: dict
notes:
  description: Why each choice was made, in order. Each has a stable C(id), English C(text), and a C(code) when
    the id covers several cases.
  returned: always
  type: list
  elements: dict
  sample: [{id: ngl.sentinel_auto, text: "NGL=999 (sentinel 'all layers') -> -ngl auto ..."}]
plan_warnings:
  description:
    - Notes that deserve attention (slow KV types, RAM load risk), as C(id)/C(text) dicts; each is also emitted as
      an Ansible warning. It is not named C(warnings) because Ansible reserves that key for its own warning
      strings.
  returned: always
  type: list
  elements: dict
refusal:
  description: The load guard's refusal (the launch would not fit in RAM), or null.
  returned: always
  type: dict
external:
  description: The preset targets a remote API (C(EXTERNAL=1)); there is nothing to deploy.
  returned: always
  type: bool
api_key_via_env:
  description: A key is in effect but the engine cannot read it from a file; pass C(LLAMA_API_KEY) instead.
  returned: always
  type: bool
slot_dir:
  description: The directory the plan passes to C(--slot-save-path), empty when none. The service must create it
    (mode 0700) and empty it at each start; the engine refuses to start without it. Same as RV(decisions.slot_dir).
  returned: always
  type: str
decisions:
  description:
    - What the plan decided that the service around the engine must follow, so that nothing downstream
      re-derives it from the argv or the preset.
  returned: always
  type: dict
  contains:
    host:
      description: The C(--host) value the engine listens with (the last one of the argv).
      type: str
    port:
      description: The C(--port) value.
      type: str
    listen:
      description: The addresses of RV(decisions.host).
      type: list
      elements: str
    loopback_only:
      description: Every address is a loopback address or a UNIX socket; nothing beyond this host reaches it.
      type: bool
    health_url:
      description: Where this host itself asks the engine's C(/health).
      type: str
    health_unix_socket:
      description: The UNIX socket to ask it through, empty for TCP.
      type: str
    slot_dir:
      description: The C(--slot-save-path) the plan wrote, empty when none.
      type: str
    slot_persist:
      description: SLOT_PERSIST was accepted; C(persist-*) files in the slot directory survive a start.
      type: bool
    api_key_file:
      description: The C(--api-key-file) the plan wrote, empty when none.
      type: str
    metrics:
      description: The engine serves Prometheus metrics at C(/metrics) (C(--metrics) in the argv, from the preset's
        C(METRICS) or its C(EXTRA_ARGS), or C(LLAMA_ARG_ENDPOINT_METRICS) true in the service environment).
      type: bool
    preflight_swaps:
      description: Argv positions whose value exists only under the service (index, what), given stand-ins by
        the preflight.
      type: list
      elements: list
  sample: {host: 127.0.0.1, port: "8080", listen: [127.0.0.1], loopback_only: true,
           health_url: "http://127.0.0.1:8080/health", health_unix_socket: "", slot_dir: "", slot_persist: false,
           api_key_file: "", metrics: false, preflight_swaps: []}
memory:
  description:
    - What the launch needs per device, from the GGUF header and the plan (docs/placement.md); the placement reads it.
      C(known) is false (with C(why_unknown)) when the header gave no tensor table or vocabulary.
  returned: always
  type: dict
  contains:
    known:
      description: The estimate could be made.
      type: bool
    why_unknown:
      description: Why not, when it could not.
      type: str
    host_mib:
      description: MiB of the host's RAM (everything on a CPU engine; the input embeddings with cards).
      type: int
    cards_mib:
      description: MiB over every card that takes the layers.
      type: int
    devices:
      description: Per device (C(host), or a card's index among the visible ones) C(model_mib), C(context_mib),
        C(compute_mib) and C(total_mib).
      type: list
      elements: dict
  sample: {known: true, why_unknown: "", host_mib: 826, cards_mib: 0,
           devices: [{device: host, model_mib: 236, context_mib: 27, compute_mib: 563, total_mib: 826}]}
unset_environment:
  description:
    - Engine variables (C(LLAMA_ARG_*), C(GGML_*), C(CUDA_*), C(LLAMA_API_KEY)) that the systemd manager passes to
      every unit (C(systemctl show-environment)) and that the plan does not set. The unit must unset them
      (C(UnsetEnvironment=)), so that the engine gets its variables from the plan only. Empty without O(unit) or with
      O(engine_image).
  returned: always
  type: list
  elements: str
preflight:
  description: What the engine's own parser said of the planned command line (O(preflight)); null when it did
    not run (an external preset, O(host_facts), or O(preflight=false)).
  returned: always
  type: dict
  contains:
    passed:
      description: The engine parsed every argument.
      type: bool
    runs:
      description: Engine starts for it; 0 when a cached pass was used.
      type: int
    engine_says:
      description: The engine's own error line(s) when it refused.
      type: str
    system_config:
      description: C(hidden) when C(/etc/llama.cpp/config.ini) exists and was kept out, C(visible) when it
        could not be, empty when there is none.
      type: str
port_conflict:
  description: Who else listens on the planned port, when O(check_port) found a conflict and did not fail.
  returned: always
  type: str
facts:
  description: What was probed (paths, sizes, GGUF fields, GPUs, RAM, engine build, cache use). Never a key.
  returned: always
  type: dict
engine_runs:
  description: How many times the engine was executed (with O(engine_image), how many containers were started)
    by this run; 0 when its texts came from the cache.
  returned: always
  type: int
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._converge.planning import (  # noqa: E402
    plan_from_params,
)
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._probes import plan_options  # noqa: E402


def main() -> None:
    module = AnsibleModule(
        argument_spec=plan_options.argument_spec(),
        supports_check_mode=True,
    )
    outcome = plan_from_params(module.params, module.check_mode, warn=module.warn)
    module.no_log_values.update(outcome.secrets)
    if outcome.exception:
        module.fail_json(msg=outcome.failure, exception=outcome.exception)
    if outcome.failure:
        module.fail_json(msg=outcome.failure, **outcome.result)
    module.exit_json(**outcome.result)


if __name__ == "__main__":
    main()
