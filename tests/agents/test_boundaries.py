"""The runtime's import boundaries (DESIGN.md, "Layout"): agents/runtime and agents/llm know
no pipeline, no case type and no Celery task; pipelines register themselves from the agents
app's ready(). Read from the source, so a lazy import inside a function counts too."""

from __future__ import annotations

import ast
import pkgutil
import sys
from pathlib import Path

import agents

RUNTIME = Path(agents.__file__).parent
FORBIDDEN = ("agents.pipelines", "agents.tasks", "agents.services", "agents.views", "casework")


def _imports(path: Path) -> list[str]:
    names = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module)
        elif isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
    return names


def test_the_runtime_imports_no_pipeline_task_or_case_type():
    offenders = [
        f"{path.relative_to(RUNTIME.parent)} imports {name}"
        for folder in ("runtime", "llm")
        for path in sorted((RUNTIME / folder).glob("*.py"))
        for name in _imports(path)
        if name.startswith(FORBIDDEN)
    ]
    assert offenders == []


def test_the_pipeline_executor_and_the_task_module_do_not_import_each_other():
    assert not any(name.startswith("agents.tasks") for name in _imports(RUNTIME / "runtime" / "pipeline.py"))
    assert "agents.runtime.pipeline" in _imports(RUNTIME / "tasks.py")


def test_every_pipeline_module_registered_at_start_up():
    """Each module in agents/pipelines registered its pipeline when the app started (a module
    that failed to import is only logged), and every case type's pipeline is among them."""
    import agents.pipelines
    from agents.runtime.pipeline import PIPELINES, Pipeline
    from casework.cases.types import CASE_TYPES

    modules = [info.name for info in pkgutil.iter_modules(agents.pipelines.__path__) if not info.ispkg]
    registered = {}  # module: the pipelines it registered (none if it never imported)
    for name in modules:
        module = sys.modules.get(f"agents.pipelines.{name}")
        registered[name] = [p.name for p in vars(module).values() if isinstance(p, Pipeline)
                            and PIPELINES.get(p.name) is p] if module else []
    assert [name for name, pipelines in registered.items() if not pipelines] == []
    # One module per case type: what they registered is what the case types run.
    assert sorted(p for pipelines in registered.values() for p in pipelines) == sorted(
        ct.pipeline for ct in CASE_TYPES.values())
