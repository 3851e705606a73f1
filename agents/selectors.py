from __future__ import annotations

from django.db.models import Prefetch, QuerySet

from agents.models import AgentCall, AgentRun


def runs_for_case(case, *, pipeline: str | None = None) -> QuerySet[AgentRun]:
    runs = AgentRun.objects.filter(case=case)
    if pipeline:
        runs = runs.filter(pipeline=pipeline)
    return runs.order_by("-created_at", "-id")


def run_latest(case, *, pipeline: str | None = None) -> AgentRun | None:
    return runs_for_case(case, pipeline=pipeline).first()


def run_with_calls(run_id: int, case) -> AgentRun:
    return (
        AgentRun.objects.filter(case=case)
        .prefetch_related(Prefetch("calls", queryset=AgentCall.objects.order_by("id")))
        .get(pk=run_id)
    )


def run_rows(run: AgentRun) -> list[dict]:
    """One row per agent result of the run, in stage order: status, latency, tokens, error, retries."""
    rows = [_row(key, entry) for key, entry in run.results.items()]
    rows.sort(key=lambda r: (r["stage"], r["key"]))
    return rows


def _row(key: str, entry: dict) -> dict:
    return {
        "key": key,
        "agent": entry.get("agent", key),
        "stage": entry.get("stage", 0),
        "ok": not entry.get("error"),
        "error": entry.get("error", ""),
        "error_type": entry.get("error_type", ""),
        "latency_ms": entry.get("latency_ms", 0),
        "tokens": (entry.get("input_tokens") or 0) + (entry.get("output_tokens") or 0),
        "retries": max(0, (entry.get("attempts") or 1) - 1),
        "cached": bool(entry.get("cached")),
    }
