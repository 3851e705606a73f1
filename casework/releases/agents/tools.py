"""The detective's tools (seed 004): read the release summary, read the test details, file
the risk report (the final tool). The read tools check what they return: a summary that is
not the seed's shape ("garbage") is a tool error the model reads back, like a failure."""

from __future__ import annotations

import uuid
from typing import Literal

from django.conf import settings
from pydantic import BaseModel, ConfigDict, Field

from agents.runtime.tools import Tool


class ReleaseRef(BaseModel):
    model_config = ConfigDict(extra="forbid")

    release_id: str = Field(min_length=1, max_length=64, description="The release's id, as given in the task.")


class RiskReportIn(BaseModel):
    """The detective's output: what file_risk_report takes."""

    model_config = ConfigDict(extra="forbid")

    release_id: str = Field(min_length=1, max_length=64, description="The release assessed.")
    severity: Literal["high", "medium", "low"] = Field(description="The release's risk.")
    findings: list[str] = Field(min_length=1, max_length=20, description="Short sentences, each quoting tool "
                                "data: what was found, and what data was missing.")


class _Counts(BaseModel):
    passed: int = Field(ge=0)
    failed: int = Field(ge=0)
    skipped: int = Field(ge=0)


class _Metrics(BaseModel):
    error_rate: float | None
    response_time_p95: float | None


class SummaryOut(BaseModel):
    release_id: str
    version: str
    changes: list[str]
    tests: _Counts
    deployment_metrics: _Metrics


class _TestOut(BaseModel):
    name: str
    area: str
    critical: bool
    status: Literal["passed", "failed", "skipped"]
    message: str


class DetailsOut(BaseModel):
    release_id: str
    tests: list[_TestOut]


def _selectors():
    # Imported when called: tests replace these functions to make a tool fail or answer garbage.
    from casework.releases import selectors

    return selectors


def get_release_summary(args: ReleaseRef) -> dict:
    raw = _selectors().release_summary(args.release_id)
    try:
        return SummaryOut.model_validate(raw).model_dump()
    except ValueError as exc:
        raise ValueError(f"the release summary service answered data that is not a release summary ({exc})") from None


def get_test_details(args: ReleaseRef) -> dict:
    raw = _selectors().release_test_details(args.release_id)
    try:
        return DetailsOut.model_validate(raw).model_dump()
    except ValueError as exc:
        raise ValueError(f"the test service answered data that is not test details ({exc})") from None


def file_risk_report(args: RiskReportIn) -> dict:
    """Accepts the report and gives it its id; the pipeline saves it with the run that filed it."""
    _selectors().release_summary(args.release_id)  # an unknown release is refused here
    return {"report_id": f"RR-{uuid.uuid4().hex[:10].upper()}", "status": "filed", "release_id": args.release_id,
            "severity": args.severity}


def detective_tools() -> tuple[Tool, ...]:
    timeout = settings.RELEASE_TOOL_TIMEOUT_SECONDS
    return (
        Tool("get_release_summary", "Get the release's summary: version, changes, test counts (passed, failed, "
             "skipped) and deployment metrics (error_rate as a fraction, response_time_p95 in ms; null when "
             "missing).", ReleaseRef, get_release_summary, timeout, output=SummaryOut,
             consequence="read_only"),
        Tool("get_test_details", "Get every test of the release: name, area, whether it is critical, status "
             "and failure message. Use it when tests failed or the summary is concerning.", ReleaseRef,
             get_test_details, timeout, output=DetailsOut, consequence="read_only"),
        Tool("file_risk_report", "File the release's risk report: severity high, medium or low, and findings "
             "that quote the data. Call it exactly once, last.", RiskReportIn, file_risk_report, timeout,
             consequence="drafts"),
    )


def read_only_tools() -> tuple[Tool, ...]:
    """What the conversation agent of a release case may use: the two read tools."""
    return tuple(t for t in detective_tools() if t.name != "file_risk_report")
