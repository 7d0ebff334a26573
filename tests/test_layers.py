"""The layers only look down: read every first-party module's imports (with ast, not by importing) and check
their direction.

From the bottom: ``protocol``, ``setups`` and ``engine_ext`` (the rules, the engine, the lab) never import
``bot`` (the application: configuration, daemon, host, web, commands); in ``bot``, nothing imports the
commands (``bot.commands``, ``bot.cli``: the top); and no two modules import each other, directly or round
a longer loop. Every import counts, at the top of a file or inside a function or a ``TYPE_CHECKING`` block:
an import put inside a function to dodge a cycle is still the cycle.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("bot", "protocol", "setups", "engine_ext")
BELOW_THE_BOT = ("protocol", "setups", "engine_ext")
TOP = ("bot.commands", "bot.cli")


def module_files() -> dict[str, Path]:
    out = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


def imported(name: str, path: Path, modules: set[str]) -> Iterator[str]:
    """The first-party modules ``name`` (at ``path``) imports: ``from a.b import c`` is ``a.b.c`` where that
    is a module, else ``a.b``."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in modules:  # ``import a.b.c`` with c a name: its module
                target = target.rpartition(".")[0]
            if target and target != name:
                yield target


def import_graph() -> dict[str, set[str]]:
    files = module_files()
    modules = set(files)
    return {name: set(imported(name, path, modules)) for name, path in files.items()}


def under(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
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
    return found


def test_the_reader_finds_the_imports_it_is_meant_to_check() -> None:
    graph = import_graph()
    # A plain import, a from-import of a module and one of a name: each resolves to the module.
    assert "engine_ext.lab.runner" in graph["engine_ext.lab.schedule"]
    assert "bot.daemon.engine_interface" in graph["bot.config"]
    assert "engine_ext.engine.interface" in graph["bot.ucc.engine"]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_the_engine_layer_does_not_import_the_bot() -> None:
    upward = sorted(f"{module} imports {target}" for module, targets in import_graph().items()
                    if under(module, BELOW_THE_BOT) for target in targets if under(target, ("bot",)))
    assert upward == []


def test_nothing_below_the_commands_imports_them() -> None:
    upward = sorted(f"{module} imports {target}" for module, targets in import_graph().items()
                    if not under(module, TOP) for target in targets if under(target, TOP))
    assert upward == []


def test_no_two_modules_import_each_other() -> None:
    assert cycles(import_graph()) == []
