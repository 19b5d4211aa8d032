"""Faust's, mode's and aiokafka's private APIs are used in one module only: the adapter.

import-linter sees imports, not attribute access, so this reads the source instead. A
private use is an attribute `._name` (not a dunder) that no module of claimwatch outside
the adapter defines (a function, a class attribute, a `self._name = ...`, a slot), or a
private name imported from faust, mode or aiokafka, or a private method defined in a
subclass of one of their classes (an override of a private hook). Each one belongs in
`claimwatch.worker.faust_private`, whose docstring names it and says why.
"""

from __future__ import annotations

import ast

import pytest

from tests.support.paths import REPO

PACKAGE = REPO / "streams" / "claimwatch"
ADAPTER = PACKAGE / "worker" / "faust_private.py"
#: Private names of the standard library the code may use.
STDLIB = frozenset({"_exit"})
FOREIGN = ("faust", "mode", "aiokafka")


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def defined_names(tree: ast.AST) -> set[str]:
    """The private names a module defines: functions, classes, assignments, slots."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.ctx, ast.Store)
            and isinstance(node.value, ast.Name)
            and node.value.id in ("self", "cls")
        ):
            names.add(node.attr)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            names.add(node.value)  # __slots__ entries
    return {n for n in names if _private(n)}


def _foreign_names(tree: ast.AST) -> set[str]:
    """The names a module imports from faust, mode or aiokafka (and those packages)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in FOREIGN:
            names |= {alias.asname or alias.name for alias in node.names}
        elif isinstance(node, ast.Import):
            names |= {a.asname or a.name for a in node.names if a.name.split(".")[0] in FOREIGN}
    return names


def _overrides(tree: ast.AST) -> list[str]:
    """`line: def name` of each private method of a subclass of a foreign class."""
    foreign = _foreign_names(tree)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ClassDef):
            continue
        roots = {ast.unparse(base).split(".")[0].split("[")[0] for base in node.bases}
        if roots & foreign:
            found += [
                f"{item.lineno}: def {item.name}"
                for item in node.body
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and _private(item.name)
            ]
    return found


def private_uses(tree: ast.AST, defined: set[str]) -> list[str]:
    """`line: what` of each foreign private attribute, import or override in a module."""
    found = _overrides(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            if node.attr not in defined and node.attr not in STDLIB:
                found.append(f"{node.lineno}: .{node.attr}")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in FOREIGN:
            found += [
                f"{node.lineno}: {node.module}.{alias.name}"
                for alias in node.names
                if _private(alias.name)
            ]
    return found


def test_only_the_adapter_uses_private_apis_of_faust_mode_and_aiokafka() -> None:
    trees = {p: ast.parse(p.read_text("utf-8")) for p in sorted(PACKAGE.rglob("*.py"))}
    defined = set().union(*(defined_names(t) for p, t in trees.items() if p != ADAPTER))
    found = [
        f"{path.relative_to(REPO)}:{use}"
        for path, tree in trees.items()
        if path != ADAPTER
        for use in private_uses(tree, defined)
    ]
    assert [] == found


def test_the_adapter_holds_private_uses() -> None:
    """The adapter is not empty of what the check looks for (the check can fail)."""
    tree = ast.parse(ADAPTER.read_text("utf-8"))
    assert [] != private_uses(tree, set())


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("x = app.producer._ensure_producer()\n", ["1: ._ensure_producer"]),
        ("from faust.streams import _current_event\n", ["1: faust.streams._current_event"]),
        ("class S(Store):\n    def f(self):\n        return self._dbs\n", ["3: ._dbs"]),
        ("class A:\n    def _own(self): ...\n    def f(self):\n        self._own()\n", []),
        (
            "from faust import Worker\nclass W(Worker):\n    def _stop(self): ...\n",
            ["3: def _stop"],
        ),
        ("import os\nos._exit(1)\n", []),
    ],
)
def test_the_check_tells_foreign_private_uses_from_the_code_s_own(
    source: str, expected: list[str]
) -> None:
    tree = ast.parse(source)
    assert expected == private_uses(tree, defined_names(tree))
