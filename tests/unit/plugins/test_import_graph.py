"""The layers hold: the import graph of the collection's Python code, read from the sources, points one way.

- The pure packages (``_layout``, ``_inputs``, ``_planner``, ``_render``, ``_judgements``, ``_readings``, ``_gateway``,
  ``_placement`` and the façades) import no I/O package (``_probes``, ``_converge``): what decides and renders
  never reads or changes a host.
- ``_probes`` (readings) does not import ``_converge`` (changes): a reading never changes anything; nor ``_render``
  or ``_judgements``: what reads the host neither renders files nor judges.
- An action plugin imports no filter plugin: what both need lives in ``plugin_utils``.
- module_utils imports nothing of the controller's plugins (actions, filters, plugin_utils).
- No module imports itself through others: the graph has no cycle.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
PACKAGE = "ansible_collections.llamafleet.llamacpp"
PURE = ("plugins.module_utils._layout", "plugins.module_utils._inputs", "plugins.module_utils._planner",
        "plugins.module_utils._gateway", "plugins.module_utils._placement", "plugins.module_utils.fleet_placement",
        "plugins.module_utils._render", "plugins.module_utils._judgements", "plugins.module_utils._readings",
        "plugins.module_utils.planner")
IO = ("plugins.module_utils._probes", "plugins.module_utils._converge")
CONTROLLER = ("plugins.action", "plugins.filter", "plugins.plugin_utils", "plugins.callback")
# What a reading of the host may not depend on: what renders files from a plan and what judges readings.
PROBES_MAY_NOT_READ = ("plugins.module_utils._render", "plugins.module_utils._judgements")


def module_name(path: Path) -> str:
    relative = path.relative_to(ROOT).with_suffix("")
    parts = relative.parts[:-1] if relative.name == "__init__" else relative.parts
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(path): path for path in (ROOT / "plugins").rglob("*.py")}


def imports_of(path: Path, known: set[str]) -> set[str]:
    """The collection's modules this file imports (``from package import module`` counts as the module)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [f"{node.module}.{alias.name}" for alias in node.names] + [node.module]
        else:
            continue
        for name in names:
            if name.startswith(PACKAGE + "."):
                local = name[len(PACKAGE) + 1:]
                if local in known:
                    found.add(local)
    # "from pkg import module" names pkg too; keep the module alone when it is one.
    return {name for name in found if not any(other.startswith(name + ".") for other in found)}


def graph() -> dict[str, set[str]]:
    known = modules()
    names = set(known)
    return {name: imports_of(path, names) - {name} for name, path in known.items()}


def _in(name: str, prefixes) -> bool:
    return any(name == prefix or name.startswith(prefix + ".") for prefix in prefixes)


def layer_violations(edges: dict[str, set[str]]) -> list[str]:
    found = []
    for source, targets in sorted(edges.items()):
        for target in sorted(targets):
            if _in(source, PURE) and _in(target, IO):
                found.append(f"pure {source} imports I/O {target}")
            if _in(source, ("plugins.module_utils._probes",)) and _in(target, ("plugins.module_utils._converge",)):
                found.append(f"the probe {source} imports the converge step {target}")
            if _in(source, ("plugins.module_utils._probes",)) and _in(target, PROBES_MAY_NOT_READ):
                found.append(f"the probe {source} imports {target}: readings neither render nor judge")
            if _in(source, ("plugins.action",)) and _in(target, ("plugins.filter",)):
                found.append(f"the action {source} imports the filter {target}: what both need is in plugin_utils")
            if _in(source, ("plugins.module_utils",)) and _in(target, CONTROLLER):
                found.append(f"target code {source} imports controller code {target}")
    return found


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(edges.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


EDGES = graph()


def test_the_graph_is_read():
    assert len(EDGES) > 80
    assert "plugins.module_utils._converge.step" in EDGES["plugins.module_utils._converge.systemd"]
    assert "plugins.module_utils._converge.instance" in EDGES["plugins.modules.llama_server_apply"]


def test_the_layers_point_one_way():
    assert layer_violations(EDGES) == []


def test_there_is_no_cycle():
    assert cycles(EDGES) == []


@pytest.mark.parametrize(
    ("edges", "violations", "loops"),
    [
        ({"plugins.module_utils._planner.a": {"plugins.module_utils._probes.b"}},
         ["pure plugins.module_utils._planner.a imports I/O plugins.module_utils._probes.b"], []),
        ({"plugins.module_utils._probes.a": {"plugins.module_utils._converge.b"}},
         ["the probe plugins.module_utils._probes.a imports the converge step plugins.module_utils._converge.b"], []),
        ({"plugins.module_utils._converge.a": {"plugins.plugin_utils.b"}},
         ["target code plugins.module_utils._converge.a imports controller code plugins.plugin_utils.b"], []),
        ({"plugins.module_utils._probes.a": {"plugins.module_utils._render.b"}},
         ["the probe plugins.module_utils._probes.a imports plugins.module_utils._render.b: readings neither render "
          "nor judge"], []),
        ({"plugins.module_utils._probes.a": {"plugins.module_utils._judgements.b"}},
         ["the probe plugins.module_utils._probes.a imports plugins.module_utils._judgements.b: readings neither "
          "render nor judge"], []),
        ({"plugins.action.a": {"plugins.filter.b"}},
         ["the action plugins.action.a imports the filter plugins.filter.b: what both need is in plugin_utils"], []),
        ({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}, [], [["a", "b", "c"]]),
    ],
    ids=["pure to io", "probe to converge", "target to controller", "probe to render", "probe to judgements",
         "action to filter", "cycle"],
)
def test_the_checks_can_fail(edges, violations, loops):
    assert (layer_violations(edges), cycles(edges)) == (violations, loops)
