# Copyright: (c) 2026, llamafleet maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The host judge run straight from the planning venv: the host action's fast path for a host with nothing to do.

A module run costs what Ansible's module runtime costs: the controller builds its payload (every module_utils
file parsed and zipped), sends it, and the host compiles it again on every run (zipimport keeps no bytecode),
then imports Ansible's basic.py. On a host that needs nothing, that is most of the no-op's time. So the host action
keeps this collection's module_utils in the planning venv, once per version (under a digest of their sources,
compiled), and runs this entry there: it reads the judge's options (already checked by the action against the
same argument spec) as JSON from the file named in argv or from stdin, and prints the judge's result as JSON. The
judge itself is the one ``llama_server_judge`` runs.
"""

from __future__ import annotations

import json
import sys

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._converge.compose import docker_environment
from ansible_collections.llamafleet.llamacpp.plugins.module_utils._converge.host_judge import (
    judge_or_why,
    process_runner,
)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args:
        with open(args[0], encoding="utf-8") as handle:
            params = json.load(handle)
    else:
        params = json.load(sys.stdin)
    result = judge_or_why(params, process_runner(), process_runner(docker_environment(params["settings"])))
    sys.stdout.write(json.dumps({"changed": False, **result}))
    return 0
