"""The shared core names no case type (issue 22): casework/cases, agents/runtime, agents/llm,
agents/chat, agents/evals and audit never import a case type's package (casework.fraud ...)
nor its pipeline (casework.fraud.agents.pipeline, casework.fraud.agents ...). A type
contributes what it adds (its decision on a close, chat tools, evaluation adapter, dashboard
panel, demo) by registering it on its CaseType from its AppConfig.ready, and the core iterates
the registry. Read from the source with ast, so an import inside a function counts too, and so
does a model looked up by the type's app label (apps.get_model("access", ...)). Settings, URL
modules and migrations are exempt: they wire the apps together."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

from django.conf import settings

from tests.import_graph import statement_names

ROOT = Path(settings.BASE_DIR)
SHARED = ("casework/cases", "casework/entities", "agents/runtime", "agents/llm", "agents/chat", "agents/evals",
          "audit")
TYPE_PACKAGES = ("casework.fraud", "casework.support", "casework.access", "casework.transactions",
                 "casework.releases")
TYPE_LABELS = tuple(package.rpartition(".")[2] for package in TYPE_PACKAGES)


def _type_module(name: str) -> bool:
    """A name inside a case type's package (its agents and pipeline are in it)."""
    return ".".join(name.split(".")[:2]) in TYPE_PACKAGES


def _exempt(path: Path) -> bool:
    return "migrations" in path.parts or path.name in ("settings.py",) or path.name.endswith("urls.py")


def _module_of(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _named(node: ast.AST, module: str, is_package: bool) -> list[str]:
    """The modules (and module.name pairs) an import statement names, relative ones resolved
    (tests/import_graph.py, which the layers test reads the same way), or a call names by string."""
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return statement_names(node, module, is_package)
    # apps.get_model("access", "InfoRequest"), apps.get_model("access.InfoRequest"),
    # importlib.import_module("casework.access.x"): a type named by a string is still named.
    if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) \
            and isinstance(node.args[0].value, str):
        func = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        value = node.args[0].value
        if func in ("get_model", "get_app_config", "is_installed"):
            label = value.split(".")[0] if func != "is_installed" else value
            return [f"casework.{label}" if label in TYPE_LABELS else label]
        if func == "import_module":
            return [value]
    return []


def shared_imports_of_types() -> list[str]:
    offenders = []
    for folder in SHARED:
        for path in sorted((ROOT / folder).rglob("*.py")):
            if _exempt(path.relative_to(ROOT)):
                continue
            module = _module_of(path)
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            for node in ast.walk(tree):
                names = [n for n in _named(node, module, path.name == "__init__.py") if _type_module(n)]
                if names:
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno} imports {names[0]}")
    return offenders


def test_no_shared_module_imports_a_case_type():
    assert shared_imports_of_types() == []


def test_no_case_type_runs_the_executor_itself():
    """A type's demo (or anything else in its package) runs a queued run through the worker's
    task (agents.tasks.run_pipeline), the public path, never agents.runtime.pipeline.execute_run."""
    offenders = []
    for package in TYPE_PACKAGES:
        for path in sorted((ROOT / package.replace(".", "/")).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ImportFrom) and node.module == "agents.runtime.pipeline" \
                        and any(alias.name == "execute_run" for alias in node.names):
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert offenders == []


def test_the_scan_sees_every_kind_of_import(tmp_path, monkeypatch):
    """The check itself: plain, from-, relative, nested and by-label imports are all seen."""
    folder = tmp_path / "casework" / "cases"
    folder.mkdir(parents=True)
    (folder / "probe.py").write_text(
        "import casework.fraud.models\n"
        "from casework.support import services\n"
        "from casework import access\n"
        "from ..releases.services import release_decide\n"
        "def later():\n"
        "    from casework.access.agents.tools import LOOKUP_DATA\n"
        "    from casework.transactions.agents import pipeline\n"
        "    return apps.get_model('access', 'InfoRequest')\n"
        "from casework.cases.types import CASE_TYPES\n"
        "from agents.runtime import pipeline\n", encoding="utf-8")
    (folder / "urls.py").write_text("from casework.fraud import views\n", encoding="utf-8")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    monkeypatch.setattr(sys.modules[__name__], "SHARED", ("casework/cases",))

    lines = sorted(int(found.split(" imports ")[0].rpartition(":")[2]) for found in shared_imports_of_types())
    assert lines == [1, 2, 3, 4, 6, 7, 8]
