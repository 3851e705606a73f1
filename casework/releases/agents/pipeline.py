"""Release risk (seed 004): the detective, one tool-calling agent on the runtime's tool loop.

One step: the detective calls get_release_summary, get_test_details when something looks
concerning, and ends by calling file_risk_report (its final tool: the validated arguments are
its output). The runtime saves the agent call and each tool call as AgentCall rows in one
transaction. `finish` saves the report through casework.releases.services.risk_report_file:
with the run that filed it (one report per run, a database constraint), the id the tool gave
it, and what data was missing (a failed tool, a metric CI did not send); a report filed without
its data is never low, and one on failing critical tests or metrics past the high thresholds is
high, whatever the model said. A detective that failed (a 401, retries exhausted, no report
filed, a run that failed) leaves the release "assessment failed" with the provider's message,
shown on the case. The release's own status (casework/releases/states.py) is "being assessed"
from the run's start.
"""

from __future__ import annotations

import functools

from django.conf import settings

from agents.runtime.agent import Agent
from agents.runtime.pipeline import CallSpec, Pipeline, RunContext, Stage, register_pipeline
from casework.releases.agents import offline  # noqa: F401 - registers the offline analyst
from casework.releases.agents.tools import RiskReportIn, detective_tools

PIPELINE = "releases"

PROMPT = """You are the Detective, the first line of defense of a Release Confidence System: you
find what changed in a software release and which risks warrant a closer look.

For the release id in the task:
1. Call get_release_summary.
2. If any test failed, or the summary looks concerning, call get_test_details.
3. File exactly one report with file_risk_report, last.

Severity:
- high: failing tests in critical areas ({areas}) or marked critical; an error rate at or
  above {err_high}; a p95 response time at or above {p95_high} ms; risky changes ({risky})
  shipping with failing tests or an elevated error rate;
- medium: minor test failures; slight metric degradation (error rate at or above {err_med},
  p95 at or above {p95_med} ms); a risky change with clean tests and metrics;
- low: all tests passing, clean metrics, low-impact changes.
Findings are short sentences that quote only what the tools returned: test names and
messages, numbers, change descriptions. Never invent data. If a tool fails or a value is
missing, say in the findings what was missing, and never file such a report as low."""


@functools.cache
def detective_agent() -> Agent:
    """Built when first used (the prompt quotes the thresholds in settings)."""
    prompt = PROMPT.format(areas=", ".join(settings.RELEASE_CRITICAL_AREAS),
                           risky=", ".join(settings.RELEASE_RISKY_CHANGES),
                           err_high=f"{settings.RELEASE_ERROR_RATE_HIGH:.2%}",
                           err_med=f"{settings.RELEASE_ERROR_RATE_MEDIUM:.2%}",
                           p95_high=f"{settings.RELEASE_P95_HIGH_MS:g}", p95_med=f"{settings.RELEASE_P95_MEDIUM_MS:g}")
    return Agent(id="detective", system_prompt=prompt, output_model=RiskReportIn, tools=detective_tools(),
                 final_tool="file_risk_report", max_tokens=1024)


def _calls(ctx: RunContext) -> list[CallSpec]:
    return [CallSpec("detective", detective_agent(), {"release_id": ctx.state["release_id"],
                                                      "task": "Assess this release's risk and file the report."})]


def _missing_data(tool_rows) -> list[str]:
    """What the detective could not read: a read tool whose last call failed, and a metric
    the summary it read left empty."""
    last = {}
    for row in tool_rows:
        last[row.name] = row
    missing = []
    labels = {"get_release_summary": "the release summary", "get_test_details": "the test details"}
    for name, label in labels.items():
        row = last.get(name)
        if row is not None and row.status != "ok":
            missing.append(f"{label} ({row.error[:300]})")
    summary = last.get("get_release_summary")
    if summary is None:
        missing.append("the release summary (never read)")
    elif summary.status == "ok":
        metrics = ((summary.output or {}).get("result") or {}).get("deployment_metrics") or {}
        if metrics.get("error_rate") is None:
            missing.append("the error rate")
        if metrics.get("response_time_p95") is None:
            missing.append("the p95 response time")
    return missing


def _finish(ctx: RunContext) -> None:
    from agents.models import AgentCall
    from casework.releases.services import release_assessment_fail, risk_report_file

    run, release_id = ctx.run, ctx.state["release_id"]
    entry = ctx.results.get("detective")
    output = ctx.output("detective")
    if output is None:
        error = (entry or {}).get("error") or {
            "timed_out": f"The detective did not finish within {settings.RUN_TIMEOUT_SECONDS} s.",
        }.get(ctx.stop_reason, "The detective did not file a report.")
        release_assessment_fail(run=run, release_id=release_id, error=error)
        return
    tool_rows = list(AgentCall.objects.filter(run=run, kind=AgentCall.Kind.TOOL).order_by("id"))
    filed = [r for r in tool_rows if r.name == "file_risk_report" and r.status == "ok"]
    report_id = ((filed[-1].output or {}).get("result") or {}).get("report_id") if filed else None
    risk_report_file(run=run, release_id=release_id, report_id=report_id or f"RR-RUN{run.pk}",
                     severity=output["severity"], findings=output["findings"],
                     missing_data=_missing_data(tool_rows), provider=run.provider)


def _release(ctx: RunContext):
    from casework.releases.models import Release

    return Release.objects.select_related("case").get(release_id=ctx.state["release_id"])


def _prepare(ctx: RunContext) -> None:
    from casework.releases.services import release_assessment_started

    release_assessment_started(release=_release(ctx))


def _on_failed(ctx: RunContext, exc: Exception) -> None:
    """The run failed (e.g. while filing): the release says the assessment failed, not "being assessed"."""
    from casework.releases.services import release_assessment_fail

    release_assessment_fail(run=ctx.run, release_id=ctx.state["release_id"], error=f"{type(exc).__name__}: {exc}",
                            actor="system")


releases_pipeline = register_pipeline(Pipeline(
    name=PIPELINE,
    description="Release risk (seed 004): the detective's tool loop files one risk report.",
    modes={"assess": [Stage("detective", _calls)]},
    prepare=_prepare,
    finish=_finish,
    on_failed=_on_failed,
))
