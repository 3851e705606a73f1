"""The import graph of casework/, agents/ and audit/, read from the source with ast (so an
import inside a function counts too), and the layers it must point down through
(DESIGN.md, "Layout"; issue 45).

Layers, bottom up. A module may import from its own layer or any layer below it, never above:

0. audit: the append-only trail and tracing.
1. the platform: people, security, ops, idempotency, the project's own helpers
   (casework/errors.py ...), and the agent runtime: providers, the tool loop, durable runs
   and the Celery tasks that run registered pipelines (agents.llm, agents.runtime,
   agents.models, agents.tasks, agents.services).
2. delivery: the outbox (events, endpoints, webhooks, e-mail).
3. the case core: casework/cases (Case, types, lifecycle, services, queue), and the actions a
   decision asks of other systems (casework.cases.actions): an action is a state of its case,
   the queue filters and flags cases by their overdue actions, and actions build only on the
   lifecycle and the outbox below them.
4. what sits on cases: entities, notifications, tasks, attachments, saved views,
   the dashboard and report, the runs' receivers and pages, chat and evaluation.
5. the case types, each one package.

Wiring is exempt from the layers (not from circles): settings, URL modules, the Celery app,
WSGI/ASGI and migrations put the apps together and may name any of them.
A name that is not a module (`from casework.cases import models` names a module;
`from casework.cases.models import Case` names casework.cases.models) resolves to the
deepest module it names."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

TOP_PACKAGES = ("casework", "agents", "audit")
TYPES = ("casework.fraud", "casework.support", "casework.access", "casework.transactions", "casework.releases")

# Prefix -> layer; the longest prefix that matches a module decides.
LAYERS: dict[str, int] = {
    "audit": 0,
    "casework": 1,
    "casework.people": 1,
    "casework.security": 1,
    "casework.ops": 1,
    "casework.idempotency": 1,
    "casework.sqlite": 1,
    "agents": 1,
    "agents.llm": 1,
    "agents.runtime": 1,
    "casework.outbox": 2,
    "casework.cases": 3,
    "casework.entities": 4,
    "casework.privacy": 4,
    "casework.actions": 4,
    "casework.budgets": 4,
    "casework.cases.actions": 3,  # the case core's: see the docstring
    "casework.cases.notifications": 4,
    "casework.cases.tasks": 4,
    "casework.cases.attachments": 4,
    "casework.cases.saved_views": 4,
    "casework.cases.dashboard": 4,
    "casework.cases.report": 4,
    "agents.apps": 4,
    "agents.signals": 4,
    "agents.views": 4,
    "agents.trace_waterfall": 4,
    "agents.chat": 4,
    "agents.approvals": 4,
    "agents.run_lifecycle": 4,
    "agents.evals": 4,
    **{package: 5 for package in TYPES},
}
LAYER_NAMES = ("audit", "platform", "delivery", "case core", "on cases", "case types")

WIRING_MODULES = ("casework.settings", "casework.urls", "casework.celery", "casework.wsgi", "casework.asgi")


def is_wiring(module: str) -> bool:
    last = module.rpartition(".")[2]
    return module in WIRING_MODULES or last in ("urls", "api_urls") or ".migrations" in module


def layer_of(module: str, layers: dict[str, int] | None = None) -> int:
    layers = LAYERS if layers is None else layers
    parts = module.split(".")
    for end in range(len(parts), 0, -1):
        prefix = ".".join(parts[:end])
        if prefix in layers:
            return layers[prefix]
    raise LookupError(f"{module} is in no layer: add its package to tests/import_graph.py LAYERS")


@dataclass
class Graph:
    modules: dict[str, Path]
    # module -> {imported module: first line that imports it}
    edges: dict[str, dict[str, int]] = field(default_factory=dict)


def _module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def statement_names(node: ast.AST, module: str, is_package: bool) -> list[str]:
    """What an import statement names, relative imports resolved: `import a.b` names a.b;
    `from a import b, c` names a, a.b and a.c (b may be a module or a name in a)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            package = module.split(".") if is_package else module.split(".")[:-1]
            package = package[:len(package) - node.level + 1]
            base = ".".join([*package, base] if base else package)
        return [base, *(f"{base}.{alias.name}" for alias in node.names)]
    return []


def _imported_names(node: ast.AST, module: str, is_package: bool, modules: dict[str, Path]) -> list[str]:
    names = statement_names(node, module, is_package)
    if isinstance(node, ast.ImportFrom):
        # `from package import submodule` imports the submodule; `from module import name`, the module.
        base, named = names[0], names[1:]
        return [name if name in modules else base for name in named]
    return names


def build(root: Path, packages: tuple[str, ...] = TOP_PACKAGES) -> Graph:
    modules = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            if "migrations" in path.relative_to(root).parts:
                continue
            modules[_module_name(root, path)] = path
    graph = Graph(modules)
    for module, path in modules.items():
        found: dict[str, int] = {}
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            for name in _imported_names(node, module, path.name == "__init__.py", modules):
                while name and name not in modules:
                    name = name.rpartition(".")[0]
                if name and name != module:
                    found.setdefault(name, node.lineno)
        graph.edges[module] = found
    return graph


def circles(graph: Graph) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for start in graph.edges:
        if start in index:
            continue
        work = [(start, iter(graph.edges[start]))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(graph.edges[child])))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
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
    return sorted(found, key=lambda c: (-len(c), c))


def upward_imports(graph: Graph, layers: dict[str, int] | None = None) -> list[str]:
    """Each import from a lower layer into a higher one, as 'path:line module (layer) imports
    other (layer)'. Imports between two case types are upward too: a type is its own package."""
    found = []
    for module, imported in graph.edges.items():
        if is_wiring(module):
            continue
        own = layer_of(module, layers)
        for other, line in imported.items():
            if is_wiring(other):
                continue
            theirs = layer_of(other, layers)
            other_type = own == theirs == 5 and _type_of(module) != _type_of(other)
            if theirs > own or other_type:
                found.append(f"{graph.modules[module]}:{line} {module} ({LAYER_NAMES[own]}) imports "
                             f"{other} ({LAYER_NAMES[theirs]})")
    return sorted(found)


def _type_of(module: str) -> str:
    return ".".join(module.split(".")[:2])
