# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The gateway's settings: the C(settings) option of llamafleet.llamacpp.llama_gateway_config. Its suboptions are
written from the table in plugins/module_utils/_gateway/settings.py by scripts/generate_settings.py."""

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  settings:
    description:
      - The gateway's settings. The C(llamafleet.llamacpp.llama_gateway) role passes its variables
        C(llama_gateway_<name>) here; the clients' keys go in O(api_keys).
    type: dict
    default: {}
    suboptions:
      # BEGIN generated settings from plugins/module_utils/_gateway/settings.py (scripts/generate_settings.py)
      listen_address:
        description:
          - Address the gateway listens on (an IP address; V(0.0.0.0) or V(::) for every address).
        type: str
        default: 0.0.0.0
      port:
        description:
          - Port of the OpenAI-compatible endpoint. From 1 to 65535.
        type: int
        default: 8000
      allow_open:
        description:
          - Serve without client keys (an empty key list fails otherwise).
        type: bool
        default: false
      default_model:
        description:
          - Model of a request that names none (no C(model) in its body, no C(?model=) on a GET); empty for the first
            served model by name.
        type: str
        default: ""
      tls_certificate:
        description:
          - PEM file on the gateway host (certificate, chain and private key) to serve HTTPS with; empty for plain HTTP.
        type: str
        default: ""
      max_body_bytes:
        description:
          - Largest request body (413 beyond). The whole body is read before routing, so this also sizes HAProxy's
            buffers. From 4096 to 67108864.
        type: int
        default: 1048576
      max_header_bytes:
        description:
          - Largest request header block (431 beyond). From 1024 to 262144.
        type: int
        default: 32768
      request_timeout_s:
        description:
          - Time a client has to send its headers and body (408 beyond). From 1 to 3600.
        type: int
        default: 30
      queue_timeout_s:
        description:
          - Longest wait of a request for a free slot, or for a replica back in rotation (503 beyond). From 1 to 3600.
        type: int
        default: 60
      connect_timeout_s:
        description:
          - Time to connect to an engine. From 1 to 300.
        type: int
        default: 5
      response_timeout_s:
        description:
          - Longest silence of an engine while it answers (504 beyond); a stream resets it at each token. From 1 to
            86400.
        type: int
        default: 600
      client_timeout_s:
        description:
          - Longest silence of a client. From 1 to 86400.
        type: int
        default: 600
      health_interval_s:
        description:
          - Seconds between two C(/health) checks of each engine. From 1 to 300.
        type: int
        default: 2
      maxconn:
        description:
          - Connections the gateway takes at once. From 1 to 1000000.
        type: int
        default: 4096
      drain_timeout_s:
        description:
          - How long a rollout waits for a drained instance's requests in flight before it restarts it anyway (and says
            so). From 0 to 86400.
        type: int
        default: 300
      metrics_port:
        description:
          - Port of HAProxy's Prometheus exporter (C(/metrics), with the same keys as the endpoint); 0 for none. From 0
            to 65535.
        type: int
        default: 0
      config_path:
        description:
          - HAProxy's configuration file (written root-only, 0600; a file that was not ours is kept once as
            C(<path>.before-llamafleet)).
        type: str
        default: /etc/haproxy/haproxy.cfg
      lua_path:
        description:
          - Where the gateway's Lua actions are installed.
        type: str
        default: /etc/haproxy/llamafleet.lua
      admin_socket:
        description:
          - HAProxy's runtime API socket (root only).
        type: str
        default: /run/haproxy/admin.sock
      master_socket:
        description:
          - "HAProxy's master CLI socket (Debian's unit starts HAProxy with C(-S /run/haproxy-master.sock)): a drain
            counts the requests of the processes a reload left finishing through it."
        type: str
        default: /run/haproxy-master.sock
      state_file:
        description:
          - Where the servers' states are saved before a reload (a drained instance stays drained).
        type: str
        default: /var/lib/haproxy/llamafleet-server-state
      run_user:
        description:
          - Account (user and group) HAProxy's worker runs as; empty to keep root.
        type: str
        default: haproxy
      chroot:
        description:
          - Directory HAProxy's worker is chrooted to; empty for none.
        type: str
        default: /var/lib/haproxy
      # END generated settings
"""
