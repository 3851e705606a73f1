"""/lifecycles/: every declared lifecycle, drawn from its table, with what each state means,
what it claims happened outside Casework and the fact that claim rests on, and who may make
each move."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.shortcuts import render

from casework.cases.lifecycle.diagram import box_lines, diagram
from casework.cases.lifecycle.table import claims_without_fact, lifecycles


@login_required
def index(request):
    drawn = []
    for lifecycle in lifecycles():
        picture = diagram(lifecycle)
        boxes = [{"box": b, "lines": box_lines(b)} for b in picture.boxes]
        moves = [{"source": lifecycle.label_of(t.source), "target": lifecycle.label_of(t.target),
                  "by": sorted(t.by), "note": t.note} for t in lifecycle.transitions]
        drawn.append({"lifecycle": lifecycle, "picture": picture, "boxes": boxes, "moves": moves,
                      "unfounded": claims_without_fact(lifecycle),
                      "unreachable": [s.label for s in lifecycle.states if s.key not in lifecycle.reachable()]})
    return render(request, "cases/lifecycles.html", {"drawn": drawn})
