"""The agents' part of a case page: the run followed live, its trace, re-run buttons."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST

from agents import selectors, services
from agents.models import AgentRun
from agents.trace_waterfall import waterfall
from audit.tracing import read_trace
from casework.cases.selectors import case_get_for_user
from casework.errors import DomainError
from casework.people.roles import investigator_required


@require_GET
@investigator_required
def run_panel(request, reference: str):
    """The latest run of each pipeline for the case; polled by htmx while a run is active."""
    case = case_get_for_user(request.user, reference)
    runs = list(selectors.runs_for_case(case)[:20])
    latest_by_pipeline = {}
    for run in runs:
        latest_by_pipeline.setdefault(run.pipeline, run)
    panels = [{"run": run, "rows": selectors.run_rows(run)} for run in latest_by_pipeline.values()]
    active = any(p["run"].is_active for p in panels)
    return render(request, "agents/_run_panel.html",
                  {"case": case, "panels": panels, "history": runs, "active": active})


@require_GET
@investigator_required
def run_trace(request, reference: str, run_id: int):
    case = case_get_for_user(request.user, reference)
    run = get_object_or_404(AgentRun, pk=run_id, case=case)
    calls = run.calls.order_by("id")
    return render(request, "agents/trace.html", {"case": case, "run": run, "calls": calls,
                                                 "wf": waterfall(read_trace(run.trace_id))})


@require_POST
@investigator_required
def rerun(request, reference: str, run_id: int):
    case = case_get_for_user(request.user, reference)
    run = get_object_or_404(AgentRun, pk=run_id, case=case)
    key = request.POST.get("agent", "")
    try:
        if key:
            services.run_rerun_agent(actor=request.user, run=run, key=key)
            messages.success(request, f"Re-running {key} (and what depends on it).")
        else:
            services.run_rerun(actor=request.user, run=run)
            messages.success(request, "Re-running the whole pipeline.")
    except DomainError as exc:
        # Refused (a closed case, a run waiting for a person, one already running): the
        # status says so (409) and the message names why.
        if request.htmx:
            return HttpResponse(exc.message, status=exc.status_code)
        messages.error(request, exc.message)
        from casework.cases.views import _detail_context

        case.refresh_from_db()
        return render(request, "cases/detail.html", _detail_context(request, case), status=exc.status_code)
    return redirect("cases:detail", reference=case.reference)
