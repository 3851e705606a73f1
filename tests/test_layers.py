"""Layers that point one way, and no import circles (issue 45; DESIGN.md, "Layout").

The graph is read from the source (tests/import_graph.py), every import form counted,
including those inside functions: a lazy import hides a circle from Python, not from a reader.
The last two tests plant a circle and an upward import in a copy of the tree and show that
the checks see them."""

from __future__ import annotations

import shutil
from pathlib import Path

from django.conf import settings

from tests import import_graph

ROOT = Path(settings.BASE_DIR)


def test_no_import_circles():
    assert import_graph.circles(import_graph.build(ROOT)) == []


def test_no_import_points_up_a_layer():
    assert import_graph.upward_imports(import_graph.build(ROOT)) == []


def test_every_module_has_a_layer():
    graph = import_graph.build(ROOT)
    for module in graph.modules:
        import_graph.layer_of(module)  # raises, naming the module, when it has none


def _tree_copy(tmp_path: Path) -> Path:
    for package in import_graph.TOP_PACKAGES:
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__", "migrations"))
    return tmp_path


def test_a_planted_circle_is_found(tmp_path):
    root = _tree_copy(tmp_path)
    # audit.services is imported by most of the tree; make it import one of its importers back,
    # inside a function, the form a circle usually hides in.
    with (root / "audit" / "services.py").open("a", encoding="utf-8") as f:
        f.write("\n\ndef _planted():\n    from casework.security import tokens  # noqa: F401\n")

    found = import_graph.circles(import_graph.build(root))

    assert any({"audit.services", "casework.security.tokens"} <= set(circle) for circle in found)


def test_a_planted_upward_import_is_found(tmp_path):
    root = _tree_copy(tmp_path)
    # The case core naming a case type, by a relative import.
    with (root / "casework" / "cases" / "sla.py").open("a", encoding="utf-8") as f:
        f.write("\n\ndef _planted():\n    from ..fraud import models  # noqa: F401\n")
    # One case type naming another.
    with (root / "casework" / "releases" / "selectors.py").open("a", encoding="utf-8") as f:
        f.write("\nfrom casework.support.models import Ticket  # noqa: F401, E402\n")

    found = import_graph.upward_imports(import_graph.build(root))

    assert any("casework.cases.sla (case core) imports casework.fraud.models (case types)" in line for line in found)
    assert any("casework.releases.selectors (case types) imports casework.support.models" in line for line in found)
