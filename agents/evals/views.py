"""The evaluations page (staff): runs over time per suite, each run's scenarios against the
baseline; and "Add to evaluation suite" for a closed case (investigators)."""

from __future__ import annotations

import difflib
import json
from functools import wraps

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods

from agents.evals.models import EvalRun
from agents.evals.report import baseline_load, scenario_diff
from agents.evals.schema import ScenarioFileError, suite_types
from agents.evals.scoring import DIMENSIONS

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
    for suite in suite_types():
        runs = list(EvalRun.objects.filter(suite=suite).defer("report").order_by("-created_at", "-id")[:HISTORY])
        runs.reverse()
        chart = {"labels": [r.created_at.strftime("%Y-%m-%d %H:%M") for r in runs],
                 "pass_rate": [r.pass_rate for r in runs],
                 **{dim: [r.avg_scores.get(dim) for r in runs] for dim in DIMENSIONS}}
        suites.append({"name": suite, "runs": list(reversed(runs))[:10], "count": len(runs), "chart": chart,
                       "chart_id": f"chart-{suite}", "data_id": f"chart-data-{suite}"})
    return render(request, "evals/index.html", {"suites": suites})


@staff_required
def run_detail(request, pk: int):
    """A run's scenarios against the baseline it was compared with (none when it was not: a
    run is never silently set against the offline baseline), each opening onto its outputs,
    tool calls, the judge's reasons, tokens, cost and traces."""
    run = get_object_or_404(EvalRun, pk=pk)
    baseline = None
    if run.baseline:
        try:
            baseline = baseline_load(run.baseline)["suites"].get(run.suite)
        except (FileNotFoundError, ValueError):
            baseline = None
    diff = scenario_diff(run.report, baseline)
    previous = (EvalRun.objects.filter(suite=run.suite, pk__lt=run.pk).order_by("-pk").values_list("pk", flat=True)
                .first())
    rows = [{**s, "diff": diff.get(s["id"]), "outputs_json": _pretty(s.get("outputs")),
             "fields_json": _pretty(s.get("fields"))} for s in run.report.get("scenarios", [])]
    return render(request, "evals/run.html", {
        "run": run, "rows": rows, "baseline_version": run.baseline if baseline else "",
        "baseline_missing": bool(run.baseline) and baseline is None, "previous": previous,
        "attempts": (run.report.get("summary") or {}).get("attempts") or {},
        "analysis": run.report.get("regression_analysis") or {}, "config": run.report.get("config") or {}})


def _scenario(run: EvalRun, scenario_id: str) -> dict:
    found = next((s for s in run.report.get("scenarios", []) if s["id"] == scenario_id), None)
    if found is None:
        raise Http404("No such scenario in this run.")
    return found


def _pretty(value) -> str:
    return json.dumps(value, indent=1, sort_keys=True, ensure_ascii=False, default=str) if value else ""


@staff_required
def scenario_trace(request, pk: int, scenario_id: str, trace_id: str):
    """The waterfall of one of a scenario's traces (from the trace files: the scenario's own
    rows went with its throwaway database); only a trace the run's report names."""
    from agents.trace_waterfall import waterfall
    from audit.tracing import read_trace

    run = get_object_or_404(EvalRun, pk=pk)
    scenario = _scenario(run, scenario_id)
    known = set(scenario.get("trace_ids") or [])
    known.update(t for attempt in scenario.get("runs") or [] for t in attempt.get("trace_ids") or [])
    judge_trace = (scenario.get("judge") or {}).get("trace_id")
    if judge_trace:
        known.add(judge_trace)
    if trace_id not in known:
        raise Http404("This scenario has no such trace.")
    return render(request, "evals/trace.html", {"run": run, "scenario": scenario, "trace_id": trace_id,
                                                "wf": waterfall(read_trace(trace_id))})


@staff_required
def scenario_diff_view(request, pk: int, scenario_id: str):
    """A scenario's outputs, decision fields and tool calls in this run against another run of
    the suite (?against=<run id>; the run before this one by default)."""
    run = get_object_or_404(EvalRun, pk=pk)
    scenario = _scenario(run, scenario_id)
    others = EvalRun.objects.filter(suite=run.suite).exclude(pk=run.pk).defer("report").order_by("-pk")[:HISTORY]
    against_id = request.GET.get("against", "")
    if against_id and not against_id.isdigit():
        return HttpResponse("against: a run id (a number).", status=400)
    if against_id:
        other = get_object_or_404(EvalRun, pk=int(against_id), suite=run.suite)
    else:
        other = EvalRun.objects.filter(suite=run.suite, pk__lt=run.pk).order_by("-pk").first()
    before = next((s for s in (other.report.get("scenarios", []) if other else []) if s["id"] == scenario_id), None)
    lines = list(difflib.unified_diff(_comparable(before).splitlines(), _comparable(scenario).splitlines(),
                                      fromfile=f"run #{other.pk}" if other else "(no run)",
                                      tofile=f"run #{run.pk}", lineterm="", n=3))
    return render(request, "evals/diff.html", {
        "run": run, "scenario": scenario, "other": other, "before": before, "others": others,
        "lines": [{"text": line, "kind": _kind(line)} for line in lines]})


def _comparable(scenario: dict | None) -> str:
    if scenario is None:
        return ""
    keep = {"status": scenario.get("status"), "failures": scenario.get("failures"), "fields": scenario.get("fields"),
            "tool_calls": [{k: c.get(k) for k in ("name", "arguments", "status")} for c in scenario.get("tool_calls") or []],
            "outputs": scenario.get("outputs")}
    return json.dumps(keep, indent=1, sort_keys=True, ensure_ascii=False, default=str)


def _kind(line: str) -> str:
    if line.startswith(("+++", "---")):
        return "file"
    if line.startswith("@@"):
        return "hunk"
    return {"+": "added", "-": "removed"}.get(line[:1], "same")


@login_required
@require_http_methods(["GET", "POST"])
def add_to_suite(request, reference: str):
    """A closed case as a new scenario: the person's decision is the expectation, personal
    data masked; the investigator edits the YAML, then saves it into the suite or downloads it."""
    from agents.evals.export import ExportRefused, scenario_export
    from agents.evals.stored import stored_scenario_add
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
            scenario = stored_scenario_add(case=case, text=text, actor=request.user)
        except ScenarioFileError as exc:
            error = str(exc)
        else:
            messages.success(request, f"Scenario {scenario.id} added to the {case.case_type} suite; it runs once "
                                      "a second person has approved it.")
            return redirect("cases:detail", reference=case.reference)
    return render(request, "evals/add.html", {"case": case, "text": text, "error": error})


@staff_required
def stored_list(request):
    """Scenarios added from cases: the pending ones to review (by someone other than their
    author), the reviewed ones for the record."""
    from agents.evals.models import StoredScenario

    rows = StoredScenario.objects.select_related("created_by", "reviewed_by").order_by("status", "-created_at")[:200]
    return render(request, "evals/stored.html", {"rows": rows})


@staff_required
@require_http_methods(["POST"])
def stored_review(request, pk: int):
    from agents.evals.models import StoredScenario
    from agents.evals.stored import ReviewRefused, stored_scenario_review

    stored = get_object_or_404(StoredScenario, pk=pk)
    action = request.POST.get("action", "")
    if action not in ("approve", "reject"):
        return HttpResponse("action: approve or reject.", status=400)
    try:
        stored_scenario_review(stored=stored, actor=request.user, approve=action == "approve",
                               note=request.POST.get("note", ""))
    except ReviewRefused as exc:
        messages.error(request, str(exc))
        return redirect("evals:stored")
    messages.success(request, f"{stored.suite}/{stored.scenario_id} {'approved' if action == 'approve' else 'rejected'}.")
    return redirect("evals:stored")
