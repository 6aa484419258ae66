#!/usr/bin/env bash
# Run `ansible-test sanity` on this checkout. ansible-test insists on working
# inside ansible_collections/<namespace>/<name>, so the tracked and new files are
# copied there first (build outputs and caches stay behind).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv=${VENV:-$root/.venv}
# Outside this git checkout: ansible-test would otherwise ask git for the file
# list and find the copy ignored.
base=$(mktemp -d "${TMPDIR:-/tmp}/llamafleet-ansible-test.XXXXXX")
trap 'rm -rf "$base"' EXIT
dest="$base/ansible_collections/llamafleet/llamacpp"
mkdir -p "$dest"
(cd "$root" && git ls-files -z --cached --others --exclude-standard) | (cd "$root" && xargs -0 cp --parents -t "$dest")
# ansible-test downloads a pip bootstrap script from a host unreachable here.
pip_version=$("$venv/bin/python" - <<'PY'
import pathlib, re, ansible_test
text = (pathlib.Path(ansible_test.__file__).parent / "_internal" / "python_requirements.py").read_text()
print(re.search(r"pip='([0-9.]+)'", text).group(1))
PY
)
bootstrap="$HOME/.ansible/test/cache/get_pip_${pip_version//./_}.py"
mkdir -p "$(dirname "$bootstrap")"
cp "$root/scripts/ansible_test_get_pip.py" "$bootstrap"
cd "$dest"
# --venv: ansible-test builds its own virtual environments with the linters it pins, for the venv's own
# Python (3.11 for the dev venv and ansible-core 2.16, 3.12 for the newest ansible-core).
python_version=$("$venv/bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
PATH="$venv/bin:$PATH" "$venv/bin/ansible-test" sanity --venv --python "$python_version" --color no "$@"
