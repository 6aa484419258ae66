"""The collection's target code kept in the planning venv (target_code.py), installed and run for real here with
this Python: the archive, the install beside other versions, the judge's entry run from it."""

import json
import subprocess
import sys
import zipfile
from io import BytesIO

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._layout.settings import defaults
from ansible_collections.llamafleet.llamacpp.plugins.plugin_utils import target_code


def test_the_archive_holds_every_source_of_module_utils_and_nothing_else():
    names = zipfile.ZipFile(BytesIO(target_code.archive())).namelist()
    prefix = "ansible_collections/llamafleet/llamacpp/plugins/module_utils/"
    assert all(name.startswith(prefix) and name.endswith(".py") for name in names)
    assert {prefix + "planner.py", prefix + "_converge/judge_entry.py", prefix + "_layout/settings.py"} <= set(names)
    assert len(names) == len(target_code.sources()) > 60
    assert len(target_code.digest()) == 16


def _run(*args, stdin=""):
    return subprocess.run([sys.executable, "-I", "-c", *args], input=stdin, capture_output=True, text=True,
                          check=False, timeout=120)


def test_installed_then_run_as_the_judge(tmp_path):
    venv = str(tmp_path / "venv")
    code = target_code.code_dir(venv)
    assert _run(target_code.RUN, code).returncode == target_code.MISSING
    (tmp_path / "venv" / "llamafleet-code" / "0123456789abcdef").mkdir(parents=True)  # an older version
    bundle = tmp_path / "code.zip"
    bundle.write_bytes(target_code.archive())
    installed = _run(target_code.INSTALL, code, str(bundle))
    assert installed.returncode == 0, installed.stderr
    assert sorted(p.name for p in (tmp_path / "venv" / "llamafleet-code").iterdir()) == [target_code.digest()]
    assert list((tmp_path / "venv" / "llamafleet-code").rglob("__pycache__"))  # compiled once, here
    options = {"instances": [], "keys": {}, "absent": [], "settings": defaults(),
               "account": {"user": "llamafleet-no-such-user", "group": "llamafleet-no-such-group", "home": "/",
                           "shell": "/bin/sh", "comment": ""},
               "directories": [], "planning_venv": {"marker": str(tmp_path / "none.json"), "manifest": {"a": 1}},
               "engine": {}, "models": [], "unit_dir": str(tmp_path), "lock_path": str(tmp_path / "lock")}
    judged = _run(target_code.RUN, code, stdin=json.dumps(options))
    assert judged.returncode == 0, judged.stderr
    assert json.loads(judged.stdout) == {
        "changed": False, "current": False, "report": [], "kept": [], "engine": "", "lock_holder": {},
        "work": {"all": True, "instances": []},
        "why": ["the service group llamafleet-no-such-group does not exist",
                "the planning runtime is not the wanted one"]}
    options_file = tmp_path / "options.json"
    options_file.write_text(json.dumps(options))
    assert json.loads(_run(target_code.RUN, code, str(options_file)).stdout)["current"] is False
