"""The case page's and the API's view of a fraud alert: the latest assessment, read as an
investigator reads it (risk block, side-by-side specialists, disagreement, similar cases,
features per evidence tab)."""

from __future__ import annotations

import re

from casework.cases.models import Case
from casework.fraud.features import FEATURES
from casework.fraud.models import Alert, KnowledgePattern
from casework.fraud.similarity import similar_confirmed_count
from casework.fraud.states import FRAUD_LIFECYCLE, AlertStatus
from casework.fraud.thresholds import LIKELIHOOD_BANDS, NETWORK_CLUSTER_BANDS, TRANSACTION_BANDS


def alert_get_for_case(case: Case) -> Alert | None:
    """The fraud alert that opened this case, or None (a case made by hand has none)."""
    return Alert.objects.select_related("account", "case").filter(case=case).first()


# --- The case page and the API: the latest assessment, read as an investigator reads it ---

ASSESSMENT_MODES = ("alert_creation", "case_open")
SPECIALIST_KEYS = ("transaction", "identity", "geo", "network", "outcome_similarity")
AGENT_LABELS = {
    "transaction": "Transaction agent",
    "identity": "Identity agent",
    "geo": "Geo agent",
    "network": "Network agent",
    "outcome_similarity": "Outcome similarity agent",
    "orchestrator": "Orchestrator",
    "knowledge_capture": "Knowledge capture agent",
}
SPECIALIST_NAMES = {"transaction": "Transaction", "identity": "Identity", "geo": "Access & Geo",
                    "network": "Network", "outcome_similarity": "Similar cases"}
# The raw features each evidence tab shows beside its agent's findings: the agent's own
# inputs (seed 000, section 3.2).
TAB_FEATURES = {
    "transaction": ("declared_income_annual", "deposits_total", "deposits_count", "withdrawals_total",
                    "withdrawals_count", "deposit_withdraw_cycle_days_avg", "deposits_vs_income_ratio"),
    "identity": ("kyc_face_match_score", "account_age_days"),
    "geo": ("vpn_usage_pct", "countries_accessed_count"),
    "network": ("device_shared_count", "ip_shared_count"),
    "outcome_similarity": (),
}
RATE_LIMIT_MESSAGE = "Rate limit reached. Please try again in a minute."
COPILOT_CHARS = 280
ONE_LINE_CHARS = 160
# Bands that put a specialist's number on the same low/medium/high scale as the others, for
# the side-by-side view (the same cut-offs the offline analysts use).


def assessment_run_latest(case: Case):
    """The newest assessment run of the case (alert_creation or case_open), active or not."""
    from agents.models import AgentRun

    return (AgentRun.objects.filter(case=case, pipeline="fraud", mode__in=ASSESSMENT_MODES)
            .order_by("-created_at", "-id").first())


def close_run_latest(case: Case):
    from agents.models import AgentRun

    return AgentRun.objects.filter(case=case, pipeline="fraud", mode="close").order_by("-created_at", "-id").first()


def pattern_for_case(case: Case) -> KnowledgePattern | None:
    return KnowledgePattern.objects.filter(case=case, decision__final=True).select_related("decision").first()


def _error_text(entry: dict) -> str:
    if entry.get("error_type") == "rate_limit":
        return RATE_LIMIT_MESSAGE
    return str(entry.get("error") or "it returned no result")


def agent_result(run, key: str) -> dict:
    """One agent's result in a run, as the page and the API read it.

    status: "completed" (output), "failed" (error), "pending" (the run is still going) or
    "not_run" (the run ended without reaching this agent, or there is no run).
    """
    entry = (run.results.get(key) if run is not None else None) or {}
    output = entry.get("output") if isinstance(entry.get("output"), dict) else None
    if entry and not entry.get("error") and output is not None:
        status = "completed"
    elif entry:
        status = "failed"
    elif run is not None and run.is_active:
        status = "pending"
    else:
        status = "not_run"
    error = _error_text(entry) if status == "failed" else ""
    label = AGENT_LABELS.get(key, key)
    return {
        "key": key,
        "label": label,
        "status": status,
        "output": output if status == "completed" else None,
        "error": error,
        "error_type": str(entry.get("error_type") or ""),
        "warning": f"{label} unavailable: {error}" if status == "failed" else "",
        "cached": bool(entry.get("cached")),
        "latency_ms": entry.get("latency_ms") or 0,
        "attempts": entry.get("attempts") or (1 if entry else 0),
    }


def _shorten(text: str, limit: int) -> str:
    """At most `limit` characters, cut at a word boundary, with an ellipsis when cut."""
    text = " ".join(str(text or "").split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    if " " in cut:
        cut = cut[: cut.rindex(" ")]
    return cut.rstrip(" ,;:(") + "…"


def _first_sentence(text: str) -> str:
    text = " ".join(str(text or "").split())
    match = re.search(r"(?<=[.!?])\s", text)
    return text[: match.start()] if match else text


def _band(value: float, high: float, medium: float) -> str:
    return "high" if value >= high else "medium" if value >= medium else "low"


def _concerns(items) -> list[str]:
    """Indicators that raise risk; the offline analysts prefix reassuring ones with 'reassuring:'."""
    return [str(i) for i in items or [] if not str(i).lower().startswith("reassuring")]


def _specialist_row(result: dict) -> dict:
    """One row of the side-by-side view: the specialist's level, its figure and one line."""
    key, out = result["key"], result["output"]
    row = {"key": key, "name": SPECIALIST_NAMES[key], "status": result["status"], "warning": result["warning"],
           "level": "", "figure": "", "line": ""}
    if out is None:
        return row
    try:
        if key == "transaction":
            score = float(out["anomaly_score"])
            row["level"], row["figure"] = _band(score, *TRANSACTION_BANDS), f"anomaly {score:.2f}"
            line = "; ".join(str(p) for p in (out.get("detected_patterns") or [])[:2])
            row["line"] = line or _first_sentence(out.get("short_explanation"))
        elif key in ("identity", "geo"):
            row["level"] = str(out[f"{key}_risk"]).lower()
            indicators = [str(i) for i in out.get("indicators") or []]
            # Concerns first; with none, what reassured the specialist ("reassuring: ..." offline).
            shown = _concerns(indicators) or [re.sub(r"^reassuring:\s*", "", i, flags=re.I) for i in indicators]
            row["line"] = "; ".join(shown[:2]) or _first_sentence(out.get("explanation"))
        elif key == "network":
            cluster, links = int(out["cluster_size"]), int(out.get("known_fraud_links") or 0)
            row["level"] = "high" if links else _band(cluster, *NETWORK_CLUSTER_BANDS)
            row["figure"] = f"cluster {cluster}, {links} fraud link{'s' if links != 1 else ''}"
            row["line"] = "; ".join(str(s) for s in (out.get("shared_signals") or [])[:2]) or _first_sentence(
                out.get("explanation"))
        elif key == "outcome_similarity":
            likelihood = float(out["fraud_likelihood"])
            row["level"] = _band(likelihood, *LIKELIHOOD_BANDS)
            row["figure"] = f"likelihood {likelihood:.2f}"
            row["line"] = _first_sentence(out.get("explanation"))
    except (KeyError, TypeError, ValueError):
        row["level"] = ""
    row["line"] = _shorten(row["line"], ONE_LINE_CHARS)
    return row


def _disagreement(rows: list[dict]) -> dict | None:
    """Specialists disagree when at least one sees high risk and another low."""
    high = [r["name"] for r in rows if r["level"] == "high"]
    low = [r["name"] for r in rows if r["level"] == "low"]
    if high and low:
        return {"high": high, "low": low}
    return None


def _risk_block(alert: Alert, orchestrator: dict) -> dict:
    """'Why this account was flagged': the orchestrator's verdict, or the rule-based scores."""
    out = orchestrator["output"]
    if out is not None:
        return {
            "source": "orchestrator",
            "level": str(out.get("risk_level") or ""),
            "confidence": out.get("confidence"),
            "priority": str(out.get("priority") or ""),
            "summary": str(out.get("investigation_summary") or ""),
            "drivers": [str(d) for d in out.get("key_drivers") or []],
            "note": "",
        }
    status = orchestrator["status"]
    why = {"failed": "The orchestrator failed",  # its warning, with the error, is shown above the block
           "pending": "The orchestrator has not answered yet",
           "not_run": "The orchestrator has not run"}[status]
    return {
        "source": "rules",
        "level": alert.risk_level,
        "probability": alert.fraud_probability,
        "confidence": None,
        "priority": "",
        "summary": alert.one_line_explanation,
        "drivers": [str(f) for f in alert.risk_factors or []],
        "note": f"{why}; showing the rule-based risk factors and fraud probability from the "
                f"{alert.get_score_source_display().lower()} instead.",
        "note_is_warning": status == "failed",
    }


def _predictive(alert: Alert, similarity: dict, similar_count) -> dict:
    out = similarity["output"]
    if out is not None:
        return {"source": "agent", "likelihood": out.get("fraud_likelihood"),
                "count": out.get("similar_confirmed_cases_count"), "explanation": str(out.get("explanation") or "")}
    count = similar_count()
    return {
        "source": "rules", "likelihood": alert.fraud_probability, "count": count,
        "explanation": f"Fraud probability from the {alert.get_score_source_display().lower()}; "
                       f"{count} past confirmed fraud case{'s' if count != 1 else ''} "
                       f"{'resemble' if count != 1 else 'resembles'} this account by its features.",
    }


def _shown(viewer, rows: list[dict]) -> list[dict]:
    """Of other cases' rows (each with its "reference"), those `viewer` may see: the run's
    agents read every look-alike, a person is shown only the cases of their teams."""
    from casework.cases.visibility import references_visible

    visible = references_visible(viewer, [row.get("reference") for row in rows])
    return [row for row in rows if str(row.get("reference", "")).upper() in visible]


def _similar_cases(alert: Alert, run, viewer) -> list[dict]:
    """The similar confirmed cases the run's outcome_similarity agent was shown (or, with no
    run yet, found now: the linked ones first) that `viewer` may see, each with the pattern
    captured when it was closed."""
    if run is not None and "input_similar_cases" in run.state:
        cases = [dict(c) for c in run.state["input_similar_cases"] if isinstance(c, dict) and c.get("reference")]
    else:
        from casework.fraud.similarity import similar_decided

        cases = [{"reference": near.reference, "account_id": near.account_id, "distance": near.distance,
                  **({"linked_as": near.link} if near.link else {})}
                 for near in similar_decided(alert, pattern_limit=0).confirmed]
    cases = _shown(viewer, cases)
    patterns = {p.case.reference: p for p in KnowledgePattern.objects.select_related("case")
                .filter(case__reference__in=[c["reference"] for c in cases])}
    for case in cases:
        case["pattern"] = patterns.get(case["reference"])
    return cases


def _features(alert: Alert) -> dict[str, list[dict]]:
    by_name = {f.name: f for f in FEATURES}
    return {key: [{"name": name, "value": getattr(alert, name), "description": by_name[name].description}
                  for name in names]
            for key, names in TAB_FEATURES.items()}


def fraud_assessment(case: Case, *, viewer) -> dict | None:
    """Everything the fraud case page shows `viewer`, from the latest assessment run; None
    without an alert. The other cases it lists (look-alikes, linked fraud) are those the viewer
    may see.

    Keys: alert, run (the newest alert_creation/case_open run, or None), active (any fraud run
    of the case queued or running: the page polls while it is), assessing, offline, agents
    (one agent_result per agent), warnings (one line per failed agent), risk (orchestrator or
    rule-based fallback), copilot (the summary, truncated), predictive, specialists (the
    side-by-side rows), disagreement, similar_cases, features (per evidence tab), close_run,
    pattern, capture (the knowledge capture result), can_rerun, can_reassess.
    """
    from agents.models import AgentRun

    alert = alert_get_for_case(case)
    if alert is None:
        return None
    run = assessment_run_latest(case)
    close_run = close_run_latest(case) if case.is_closed else None
    agents = {key: agent_result(run, key) for key in (*SPECIALIST_KEYS, "orchestrator")}
    risk = _risk_block(alert, agents["orchestrator"])
    specialists = [_specialist_row(agents[key]) for key in SPECIALIST_KEYS]
    disagreement = _disagreement(specialists)
    for row in specialists:
        row["disagrees"] = bool(disagreement) and row["level"] in ("high", "low")
    active = AgentRun.objects.filter(case=case, pipeline="fraud", status__in=AgentRun.ACTIVE).exists()
    # Re-assess reads this alert's own specialist findings, never another alert's on the account.
    has_cache = AgentRun.objects.filter(case=case, pipeline="fraud", mode="alert_creation",
                                        status__in=AgentRun.DONE).exists()
    return {
        "alert": alert,
        "run": run,
        "active": active,
        "assessing": bool(run and run.is_active),
        "offline": bool(run and run.provider == "offline"),
        "cached_from": (run.state.get("input_cached_from_run") if run and run.mode == "case_open" else None),
        "agents": agents,
        "warnings": [a["warning"] for a in agents.values() if a["warning"]],
        "risk": risk,
        "copilot": _shorten(risk["summary"], COPILOT_CHARS),
        "predictive": _predictive(alert, agents["outcome_similarity"], lambda: similar_confirmed_count(alert)),
        "specialists": specialists,
        "disagreement": disagreement,
        "similar_cases": _similar_cases(alert, run, viewer),
        # Past look-alikes a person cleared, as the run's outcome_similarity agent was shown them.
        "similar_cleared": _shown(viewer, list(run.state.get("input_similar_cleared") or []) if run else []),
        # Linked accounts (shared device or IP) confirmed as fraud, as the network agent was told.
        "known_fraud_links": _shown(viewer, list(run.state.get("input_known_fraud_links") or []) if run else []),
        "features": _features(alert),
        "close_run": close_run,
        "pattern": pattern_for_case(case) if case.is_closed else None,
        "capture": agent_result(close_run, "knowledge_capture") if close_run else None,
        "can_rerun": not active and not case.is_closed,
        "can_reassess": not active and not case.is_closed and has_cache,
        # The alert's own state (casework/fraud/states.py) and what it means.
        "status": alert.status,
        "status_label": alert.get_status_display(),
        "status_meaning": FRAUD_LIFECYCLE.state(alert.status).meaning,
        # The guard's override of the orchestrator's priority, as the run recorded it.
        "priority_override": (run.state.get("priority_override") if run is not None else None),
        "can_retry_capture": alert.status == AlertStatus.CAPTURE_FAILED and not active,
    }
