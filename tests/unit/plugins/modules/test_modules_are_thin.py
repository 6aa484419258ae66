"""Modules hold no logic of their own (docs/architecture.md): each one translates options into a call of
module_utils and its answer into a result, so its source defines ``main`` alone, and ``main`` neither loops, nor
holds a file open (``with``), nor defines a function.

Read from the sources with ``ast``. A lambda in ``main`` is allowed (it adapts the module's ``run_command`` to the
runner module_utils expects), and so is a comprehension that builds an argument: neither holds a step of the work.
A module without ``main`` (its work done by the action plugin of the same name) passes as it is.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[4]
MODULES = sorted((ROOT / "plugins" / "modules").glob("*.py"))

LOOPS = (ast.For, ast.AsyncFor, ast.While)
WITHS = (ast.With, ast.AsyncWith)
DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def logic_found(source: str) -> list[str]:
    """What in a module's source is more than a translation: definitions beside ``main``, and loops, ``with``
    statements and nested definitions inside it; each as "line N: what"."""
    tree = ast.parse(source)
    found = []
    mains = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "main":
            mains.append(node)
    inside_main = {id(node) for main in mains for node in ast.walk(main) if node is not main}
    for node in ast.walk(tree):
        if isinstance(node, DEFINITIONS) and node not in mains and id(node) not in inside_main:
            kind = "class" if isinstance(node, ast.ClassDef) else "function"
            found.append(f"line {node.lineno}: defines the {kind} {node.name}: it belongs in module_utils")
    for main in mains:
        for node in ast.walk(main):
            if node is main:
                continue
            if isinstance(node, LOOPS):
                found.append(f"line {node.lineno}: main loops ({type(node).__name__.lower()}): the loop belongs in "
                             "module_utils")
            elif isinstance(node, WITHS):
                found.append(f"line {node.lineno}: main has a with statement: what it holds open belongs in "
                             "module_utils")
            elif isinstance(node, DEFINITIONS):
                found.append(f"line {node.lineno}: main defines {node.name}: it belongs in module_utils")
    return found


THIN = """
from ansible.module_utils.basic import AnsibleModule
from x import work


def main():
    module = AnsibleModule(argument_spec={"path": {"type": "path"}}, supports_check_mode=True)
    module.no_log_values.update(str(key) for key in module.params["keys"].values() if key)
    try:
        result, failure = work(module.params, lambda argv: module.run_command(list(argv)), module.check_mode)
    except ValueError as err:
        module.fail_json(msg=str(err))
    if failure:
        module.fail_json(msg=failure, **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
"""


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (THIN, []),
        ("DOCUMENTATION = 'module: x'\n", []),  # documentation only: the action plugin does the work
        ("def check_one(module, model):\n    pass\n\n\ndef main():\n    pass\n",
         ["line 1: defines the function check_one: it belongs in module_utils"]),
        ("class Helper:\n    pass\n\n\ndef main():\n    pass\n",
         ["line 1: defines the class Helper: it belongs in module_utils"]),
        ("try:\n    import json\nexcept ImportError:\n    def loads(text):\n        return {}\n",
         ["line 4: defines the function loads: it belongs in module_utils"]),
        ("def main():\n    for model in models:\n        check(model)\n",
         ["line 2: main loops (for): the loop belongs in module_utils"]),
        ("def main():\n    while True:\n        break\n",
         ["line 2: main loops (while): the loop belongs in module_utils"]),
        ("def main():\n    try:\n        if ok:\n            for text in warnings:\n                warn(text)\n"
         "    finally:\n        pass\n",
         ["line 4: main loops (for): the loop belongs in module_utils"]),
        ("def main():\n    with open(path) as handle:\n        handle.read()\n",
         ["line 2: main has a with statement: what it holds open belongs in module_utils"]),
        ("def main():\n    def check_one(model):\n        pass\n    check_one(1)\n",
         ["line 2: main defines check_one: it belongs in module_utils"]),
        ("def main():\n    class Result:\n        pass\n",
         ["line 2: main defines Result: it belongs in module_utils"]),
    ],
)
def test_the_check_flags_logic_in_a_module(source, expected):
    assert logic_found(source) == expected


def test_there_are_modules_to_check():
    assert len(MODULES) >= 10
    assert sum("def main(" in path.read_text(encoding="utf-8") for path in MODULES) >= 8


@pytest.mark.parametrize("path", MODULES, ids=[path.name for path in MODULES])
def test_a_module_translates_and_holds_no_logic(path):
    assert logic_found(path.read_text(encoding="utf-8")) == [], path.name
