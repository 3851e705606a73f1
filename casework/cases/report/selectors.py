"""What the report shows, read for one case: every part already ordered and shaped for the
templates (casework/cases/templates/cases/report/), the same for every case type."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import re
from typing import Any

from django.apps import apps
from django.db import models
from django.db.models import F

from audit.checkpoint_services import checkpoint_status
from audit.models import AuditEntry
from casework.cases.models import Case
from casework.cases.restriction import case_restricted_to
from casework.cases.selectors import case_comments, case_final_decision

# How many of the newest pipeline runs the report describes (one per pipeline and mode).
RUNS_SHOWN = 4
PROSE_LIMIT = 1500
_ENUM = re.compile(r"[A-Za-z]+(?:_[A-Za-z]+)+")
LIST_LIMIT = 10
# Output keys that carry an agent's recommendation, in the order they are looked for.
RECOMMENDATION_KEYS = ("recommendation", "recommendations", "risk_level", "severity", "action",
                       "recommended_action", "claim_status")
# Record fields that are machinery, not facts about the case.
RECORD_SKIP = {"id", "case", "state", "claim_token", "raw", "payload"}


def label(key: str) -> str:
    """A key as a person reads it: "risk_level" -> "Risk level"."""
    text = str(key).replace("_", " ").replace(".", " ").strip()
    return text[:1].upper() + text[1:]


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, (str, int, float, bool, decimal.Decimal, dt.date))


def _text(value: Any) -> str:
    if isinstance(value, str) and _ENUM.fullmatch(value):
        return label(value.lower())  # an enum value ("manual_intervention") in words
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:,.4f}".rstrip("0").rstrip(".")
    if isinstance(value, dt.datetime):
        return value.strftime("%Y-%m-%d %H:%M UTC")
    return str(value)


def _clip(text: str, limit: int = PROSE_LIMIT) -> str:
    return text if len(text) <= limit else text[: limit - 1].rsplit(" ", 1)[0] + " …"


def _list_item(item: Any) -> str:
    """One item of a list in an output: a sentence, or a small dict's values in words."""
    if _scalar(item):
        return _clip(_text(item), 400)
    if isinstance(item, dict):
        parts = [f"{label(k)}: {_text(v)}" for k, v in item.items() if _scalar(v) and v not in ("", None)]
        return _clip("; ".join(parts[:6]), 400) or f"{len(item)} fields"
    return f"{len(item)} items"


def summarise_output(output: Any) -> dict:
    """An agent's output for the report: short values as facts, long ones as paragraphs,
    lists as bullets (the first LIST_LIMIT), nested structures counted. Any case type."""
    facts: list[tuple[str, str]] = []
    paragraphs: list[tuple[str, str]] = []
    lists: list[tuple[str, list[str], int]] = []
    if not isinstance(output, dict):
        if output not in (None, ""):
            paragraphs.append(("Output", _clip(json.dumps(output, default=str, ensure_ascii=False))))
        return {"facts": facts, "paragraphs": paragraphs, "lists": lists}
    for key, value in output.items():
        if str(key).startswith("_") or value in (None, "", [], {}):
            continue
        if _scalar(value):
            text = _text(value)
            (facts if len(text) <= 80 else paragraphs).append((label(key), _clip(text)))
        elif isinstance(value, list):
            lists.append((label(key), [_list_item(i) for i in value[:LIST_LIMIT]], len(value)))
        elif isinstance(value, dict):
            flat = [(k, v) for k, v in value.items() if _scalar(v) and v not in ("", None)]
            if flat:
                lists.append((label(key), [f"{label(k)}: {_clip(_text(v), 300)}" for k, v in flat[:LIST_LIMIT]],
                              len(flat)))
    return {"facts": facts, "paragraphs": paragraphs, "lists": lists}


def _recommendation(results: dict) -> dict | None:
    """The last agent (by stage) whose output carries a recommendation key, and that value."""
    entries = sorted(results.items(), key=lambda item: item[1].get("stage", 0), reverse=True)
    for key, entry in entries:
        output = entry.get("output")
        if not isinstance(output, dict):
            continue
        for name in RECOMMENDATION_KEYS:
            value = output.get(name)
            if value in (None, "", []):
                continue
            items = [_list_item(v) for v in value[:5]] if isinstance(value, list) else [_clip(_text(value), 600)]
            return {"agent": label(entry.get("agent", key)), "key": label(name), "items": items}
    return None


def report_findings(case: Case) -> list[dict]:
    """The newest run of each pipeline and mode: status, provider, each agent's output
    summarised (or its error), and the recommendation the run ended with."""
    from agents.models import AgentRun  # the case domain reads agent results, never the runtime

    runs, seen = [], set()
    for run in AgentRun.objects.filter(case=case).order_by("-created_at", "-id")[:40]:
        if (run.pipeline, run.mode) in seen:
            continue
        seen.add((run.pipeline, run.mode))
        results = run.results if isinstance(run.results, dict) else {}
        agents = []
        for key, entry in sorted(results.items(), key=lambda item: (item[1].get("stage", 0), item[0])):
            agents.append({
                "name": label(entry.get("agent", key)),
                "key": key,
                "error": entry.get("error", ""),
                "summary": summarise_output(entry.get("output")),
            })
        runs.append({"run": run, "agents": agents, "recommendation": _recommendation(results)})
        if len(runs) >= RUNS_SHOWN:
            break
    return runs


def report_record(case: Case) -> list[tuple[str, str]]:
    """The case-type record's own facts (an alert's features, a release's figures ...), read
    from its model's fields: any type, including ones added later."""
    record = case.record
    if record is None:
        return []
    rows: list[tuple[str, str]] = []
    for field in record._meta.concrete_fields:
        if field.name in RECORD_SKIP or isinstance(field, models.AutoField):
            continue
        value = getattr(record, field.name)
        if value in (None, "", [], {}):
            continue
        name = str(field.verbose_name)
        name = name[:1].upper() + name[1:]
        if isinstance(field, models.ForeignKey):
            rows.append((name, str(value)))
        elif isinstance(value, dict):
            rows.extend((f"{name}: {label(k)}", _clip(_text(v), 300))
                        for k, v in list(value.items())[:30] if _scalar(v) and v not in ("", None))
        elif isinstance(value, list):
            rows.append((name, "\n".join(_list_item(v) for v in value[:LIST_LIMIT])))
        elif field.choices:
            rows.append((name, str(getattr(record, f"get_{field.name}_display")())))
        else:
            rows.append((name, _clip(_text(value), 600)))
    return rows


def report_tasks(case: Case) -> list | None:
    """The case's checklist, or None while the tasks app is not installed."""
    if not apps.is_installed("casework.cases.tasks"):
        return None
    return list(case.tasks.select_related("assignee", "done_by").order_by("position", "id"))


def report_attachments(case: Case) -> list | None:
    if not apps.is_installed("casework.cases.attachments"):
        return None
    return list(case.attachments.select_related("uploaded_by").order_by("uploaded_at", "id"))


def report_audit_entries(case: Case) -> list[AuditEntry]:
    """The case's audit entries in chain order (pending ones, not yet linked, last)."""
    return list(AuditEntry.objects.filter(case_id=case.pk)
                .order_by(F("position").asc(nulls_last=True), "id"))


def report_context(case: Case) -> dict:
    entries = report_audit_entries(case)
    return {
        "case": case,
        "restricted_to": [p.get_username() for p in case_restricted_to(case)] if case.restricted else [],
        "record": report_record(case),
        "findings": report_findings(case),
        "decision": case_final_decision(case),
        "comments": list(case_comments(case)),
        "tasks": report_tasks(case),
        "attachments": report_attachments(case),
        "audit_entries": entries,
        "audit_sequenced": sum(1 for e in entries if e.position is not None),
        # The signing key and the newest signed checkpoint: what an auditor checks the entries with.
        "checkpoint": checkpoint_status(),
    }
