"""The runtime's import boundaries (DESIGN.md, "Layout"): agents/runtime and agents/llm know
no pipeline, no case type and no Celery task; pipelines register themselves from the agents
app's ready(). Read from the source, so a lazy import inside a function counts too."""

from __future__ import annotations

import ast
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
    from agents.runtime.pipeline import PIPELINES

    assert {"fraud", "access"} <= set(PIPELINES)
