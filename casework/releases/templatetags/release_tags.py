from __future__ import annotations

from django import template

from casework.releases import selectors
from casework.releases.states import RELEASE_LIFECYCLE, ReleaseStatus

register = template.Library()


@register.simple_tag
def release_view(case) -> dict:
    """What the release partials show: the release, its latest report and the run's tool calls."""
    release = case.release
    report = selectors.release_latest_report(release)
    run = report.run if report and report.run else None
    from agents.selectors import run_latest

    latest = run_latest(case, pipeline="releases")
    shown = latest or run
    context_events = []
    if shown is not None:
        context_events = (shown.results.get("detective") or {}).get("context_events", [])
    return {
        "release": release, "report": report, "run": shown,
        "tool_calls": selectors.release_tool_calls(release, shown.pk if shown else None),
        "failed_tests": [t for t in release.test_details.all() if t.status == "failed"],
        "context_events": context_events,
        # Queued or at work: the overview polls until the report (or the failure) lands.
        "pending": release.assessment in (ReleaseStatus.RECEIVED, ReleaseStatus.PENDING),
        "status_meaning": RELEASE_LIFECYCLE.state(release.assessment).meaning,
    }


@register.filter
def percent(value) -> str:
    return "missing" if value is None else f"{float(value) * 100:.2f}%"
