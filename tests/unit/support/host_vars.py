"""A host's variables as Ansible reads an inventory's vars file, for tests of controller plugins that template
them (trusted as templates where the ansible-core release has that notion)."""

from __future__ import annotations

from pathlib import Path

from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar


def host_variables(directory: Path, text: str) -> tuple[dict, Templar, DataLoader]:
    """The variables of a vars file holding ``text`` (written under ``directory``), a templar over them, and the
    loader that read them."""
    path = directory / "vars.yml"
    path.write_text(text)
    loader = DataLoader()
    try:
        variables = loader.load_from_file(str(path), trusted_as_template=True)
    except TypeError:  # ansible-core before 2.19: every string is a template
        variables = loader.load_from_file(str(path))
    return variables, Templar(loader=loader, variables=variables), loader
