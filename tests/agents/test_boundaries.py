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


def test_every_case_type_registered_its_own_pipeline_at_start_up():
    """Each case type's AppConfig.ready loaded its pipeline from its own package
    (casework/<type>/agents/pipeline.py), and what they registered is what the types run."""
    from django.apps import apps

    from agents.runtime.pipeline import PIPELINE_MODULES, PIPELINES
    from casework.cases.types import CASE_TYPES

    for case_type in CASE_TYPES.values():
        assert case_type.pipeline in PIPELINES, case_type.key
        module = PIPELINE_MODULES[case_type.pipeline]
        app = apps.get_containing_app_config(module)
        assert module.endswith(".agents.pipeline") and app is not None, (case_type.key, module)
        assert app.name == module.removesuffix(".agents.pipeline"), (case_type.key, module)
