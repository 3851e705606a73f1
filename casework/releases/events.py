"""The release risk's action event: the release manager said go, no-go or deferred, and CI is
told so it can promote or hold the build (casework/cases/actions/services.py). Registered in the
outgoing webhooks' catalogue from ReleasesConfig.ready and sent by the decision effect below,
in the decision's transaction, whichever way the case was closed."""

from __future__ import annotations

from casework.outbox.catalogue import DECISION, EventType, action_data

RELEASE_DECIDED = EventType(
    "release.decided", 1,
    "The release manager decided a release: `decision.outcome` go (promote it), no_go (hold it) or "
    "deferred (hold it for now); CI acts on it, then confirms (or reports a failure) at "
    "`data.action.confirm_url`.",
    action_data(
        release={"type": "object", "required": ["release_id", "version"],
                 "properties": {"release_id": {"type": "string"}, "version": {"type": "string"}}},
        report={"type": "object", "nullable": True, "required": ["report_id", "severity", "override"],
                "description": "The detective's latest risk report, or null when none was filed.",
                "properties": {"report_id": {"type": "string"},
                               "severity": {"type": "string", "enum": ["high", "medium", "low"]},
                               "override": {"type": "boolean",
                                            "description": "The decision goes against the report."}}},
        decision={**DECISION, "properties": {**DECISION["properties"],
                                             "outcome": {"type": "string", "enum": ["go", "no_go", "deferred"]}}},
    ),
    action="Release decision",
)


def release_decided_on_decision(*, actor, case, decision) -> None:
    """Decision effect (casework.cases.types.case_type_register_decision_effect): every
    release decision goes to CI."""
    from casework.cases.actions.services import action_request
    from casework.outbox.services import decision_data
    from casework.releases.models import Release
    from casework.releases.services import override_of

    release = Release.objects.filter(case=case).first()
    if release is None:
        return
    report = release.reports.order_by("-filed_at", "-id").first()
    action_request(actor=actor, type=RELEASE_DECIDED.name, case=case, data={
        "release": {"release_id": release.release_id, "version": release.version},
        "report": {"report_id": report.report_id, "severity": report.severity,
                   "override": bool(override_of(decision.outcome, report.severity))} if report else None,
        "decision": decision_data(decision),
    })
