"""The files written from the settings tables (scripts/generate_settings.py: the roles' defaults, argument specs and
variable mappings, the doc fragments) are what the tables say now."""

import importlib.util
import sys
from dataclasses import replace
from pathlib import Path

from ansible_collections.llamafleet.llamacpp.plugins.module_utils._layout.settings import Setting, settings_table

ROOT = Path(__file__).resolve().parents[2]


def _load_script():
    spec = importlib.util.spec_from_file_location("generate_settings", ROOT / "scripts" / "generate_settings.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks itself up there
    spec.loader.exec_module(module)
    return module


GENERATE = _load_script()


def test_no_generated_file_is_stale():
    assert GENERATE.stale_files() == [], "run .venv/bin/python scripts/generate_settings.py"


def test_a_new_setting_makes_its_roles_files_stale(monkeypatch, capsys):
    """Proof that the check can fail, and that it writes nothing."""
    gateway = GENERATE.TABLES[1]
    grown = settings_table(gateway.settings[0].role_prefix, *gateway.settings,
                           Setting("spare_s", "int", 1, bounds=(0, 9), doc="A spare. From 0 to 9."))
    monkeypatch.setattr(GENERATE, "TABLES", (GENERATE.TABLES[0], replace(gateway, settings=grown)))
    before = {path: path.read_text() for path in GENERATE.rendered()}
    assert GENERATE.main(["--check"]) == 1
    assert capsys.readouterr().err.splitlines() == [
        f"{name}: stale, run .venv/bin/python scripts/generate_settings.py" for name in (
            "roles/llama_gateway/defaults/main.yml", "roles/llama_gateway/meta/argument_specs.yml",
            "plugins/doc_fragments/gateway_settings.py")]
    assert {path: path.read_text() for path in before} == before
    assert "llama_gateway_spare_s: 1\n# END generated settings" in GENERATE.rendered()[
        ROOT / "roles" / "llama_gateway" / "defaults" / "main.yml"]
