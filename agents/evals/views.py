"""The evaluations page (staff): runs over time per suite, each run's scenarios against the
baseline; and "Add to evaluation suite" for a closed case (investigators)."""

from __future__ import annotations

from functools import wraps

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods

from agents.evals.models import EvalRun
from agents.evals.report import baseline_load, scenario_diff
from agents.evals.schema import CASE_TYPES, ScenarioFileError

HISTORY = 50


def staff_required(view):
    @login_required
    @wraps(view)
    def wrapped(request, *args, **kwargs):
        if not request.user.is_staff:
            raise PermissionDenied("The evaluations page is for staff.")
        return view(request, *args, **kwargs)

    return wrapped


@staff_required
def index(request):
    suites = []
    for suite in CASE_TYPES:
        runs = list(EvalRun.objects.filter(suite=suite).defer("report").order_by("-created_at", "-id")[:HISTORY])
        runs.reverse()
        chart = {"labels": [r.created_at.strftime("%Y-%m-%d %H:%M") for r in runs],
                 "pass_rate": [r.pass_rate for r in runs],
                 **{dim: [r.avg_scores.get(dim) for r in runs]
                    for dim in ("tool_usage", "decision_quality", "error_handling")}}
        suites.append({"name": suite, "runs": list(reversed(runs))[:10], "count": len(runs), "chart": chart,
                       "chart_id": f"chart-{suite}", "data_id": f"chart-data-{suite}"})
    return render(request, "evals/index.html", {"suites": suites})


@staff_required
def run_detail(request, pk: int):
    run = get_object_or_404(EvalRun, pk=pk)
    version = run.baseline or "offline"
    try:
        baseline = baseline_load(version)["suites"].get(run.suite)
    except (FileNotFoundError, ValueError):
        baseline = None
    diff = scenario_diff(run.report, baseline)
    rows = [{**s, "diff": diff.get(s["id"])} for s in run.report.get("scenarios", [])]
    return render(request, "evals/run.html", {
        "run": run, "rows": rows, "baseline_version": version if baseline else "",
        "analysis": run.report.get("regression_analysis") or {}, "config": run.report.get("config") or {}})


@login_required
@require_http_methods(["GET", "POST"])
def add_to_suite(request, reference: str):
    """A closed case as a new scenario: the person's decision is the expectation, personal
    data masked; the investigator edits the YAML, then saves it into the suite or downloads it."""
    from agents.evals.export import ExportRefused, scenario_export, scenario_save
    from casework.cases.selectors import case_get_for_user

    case = case_get_for_user(request.user, reference)
    try:
        text = scenario_export(case)
    except ExportRefused as exc:
        messages.error(request, str(exc))
        return redirect("cases:detail", reference=case.reference)
    error = ""
    if request.method == "POST":
        text = request.POST.get("scenario", "")
        try:
            if request.POST.get("action") == "download":
                from agents.evals.export import scenario_validate_text

                scenario = scenario_validate_text(text, label=f"{case.reference}.yaml")
                response = HttpResponse(text, content_type="application/yaml")
                response["Content-Disposition"] = f'attachment; filename="{scenario.id}.yaml"'
                return response
            path = scenario_save(case=case, text=text, actor=request.user)
        except ScenarioFileError as exc:
            error = str(exc)
        else:
            messages.success(request, f"Scenario saved to the {case.case_type} suite: {path.name}.")
            return redirect("cases:detail", reference=case.reference)
    return render(request, "evals/add.html", {"case": case, "text": text, "error": error})
