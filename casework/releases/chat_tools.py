"""What a release adds to "Ask the agent" (agents.chat), registered on its CaseType
(casework.cases.types.case_type_register_chat): the detective's read-only tools, and the
release's figures, its assessment and its latest risk report in the conversation's context."""

from __future__ import annotations


def release_chat_tools() -> tuple:
    from casework.releases.agents.tools import read_only_tools

    return read_only_tools()


def release_chat_context(case) -> dict:
    from casework.releases.selectors import release_latest_report

    release = getattr(case, "release", None)
    if release is None:
        return {}
    report = release_latest_report(release)
    return {"release": release.summary(), "assessment": release.assessment,
            "assessment_error": release.assessment_error,
            "risk_report": {"report_id": report.report_id, "severity": report.severity, "findings": report.findings,
                            "missing_data": report.missing_data, "adjusted_from": report.adjusted_from}
            if report else None}
