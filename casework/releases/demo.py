"""Demo releases: twelve, at every severity, each assessed by the detective's pipeline (the
offline analyst unless a model is configured); a few already decided by a release manager."""

from __future__ import annotations


def _t(name, area, status="passed", critical=False, message=""):
    return {"name": name, "area": area, "status": status, "critical": critical, "message": message}


PASSING = [_t("test_login", "auth", critical=True), _t("test_checkout_total", "checkout", critical=True),
           _t("test_profile_page", "profile"), _t("test_search_suggest", "search")]

DEMO_RELEASES = [
    # The seed's own example: risky changes shipping with failing tests -> high.
    {"release_id": "rel-2-1-0", "version": "v2.1.0", "changes": ["Added payment processing", "Fixed authentication bug"],
     "tests": {"passed": 142, "failed": 2, "skipped": 5}, "deployment_metrics": {"error_rate": 0.02, "response_time_p95": 450},
     "test_details": [*PASSING, _t("test_refund_flow", "payments", "failed", True, "AssertionError: refund total 0.00 != 19.99"),
                      _t("test_card_tokenise", "payments", "failed", False, "TimeoutError after 30 s")]},
    {"release_id": "rel-2-2-0-rc1", "version": "v2.2.0-rc1", "changes": ["New session store", "Dependency upgrades"],
     "tests": {"passed": 180, "failed": 1, "skipped": 0}, "deployment_metrics": {"error_rate": 0.004, "response_time_p95": 310},
     "test_details": [*PASSING, _t("test_session_expiry", "auth", "failed", True, "session still valid after logout")]},
    {"release_id": "rel-1-9-9", "version": "v1.9.9", "changes": ["Image thumbnails rendered on the fly"],
     "tests": {"passed": 210, "failed": 0, "skipped": 3}, "deployment_metrics": {"error_rate": 0.071, "response_time_p95": 380}},
    {"release_id": "rel-3-0-0", "version": "v3.0.0", "changes": ["Database schema migration for orders", "New orders API"],
     "tests": {"passed": 301, "failed": 0, "skipped": 0}, "deployment_metrics": {"error_rate": 0.013, "response_time_p95": 520}},
    {"release_id": "rel-2-0-7", "version": "v2.0.7", "changes": ["Report export rewritten"],
     "tests": {"passed": 120, "failed": 0, "skipped": 1}, "deployment_metrics": {"error_rate": 0.002, "response_time_p95": 1450}},
    # Medium.
    {"release_id": "rel-2-0-3", "version": "v2.0.3", "changes": ["Copy changes on the pricing page", "Tooltip fixes"],
     "tests": {"passed": 98, "failed": 1, "skipped": 2}, "deployment_metrics": {"error_rate": 0.003, "response_time_p95": 290},
     "test_details": [*PASSING, _t("test_tooltip_position", "ui", "failed", False, "off by 2 px in Safari")]},
    {"release_id": "rel-2-0-4", "version": "v2.0.4", "changes": ["Search ranking tweak"],
     "tests": {"passed": 150, "failed": 0, "skipped": 0}, "deployment_metrics": {"error_rate": 0.012, "response_time_p95": 330}},
    {"release_id": "rel-2-0-5", "version": "v2.0.5", "changes": ["Security headers tightened"],
     "tests": {"passed": 150, "failed": 0, "skipped": 0}, "deployment_metrics": {"error_rate": 0.001, "response_time_p95": 250}},
    # Missing data: CI sent no metrics; filed, and never low.
    {"release_id": "rel-2-0-6", "version": "v2.0.6", "changes": ["Footer links updated"],
     "tests": {"passed": 77, "failed": 0, "skipped": 0}, "deployment_metrics": {}},
    # Low.
    {"release_id": "rel-1-9-8", "version": "v1.9.8", "changes": ["Copy changes", "Help page typo fixed"],
     "tests": {"passed": 140, "failed": 0, "skipped": 4}, "deployment_metrics": {"error_rate": 0.002, "response_time_p95": 210}},
    {"release_id": "rel-1-9-7", "version": "v1.9.7", "changes": ["Dark mode colour contrast"],
     "tests": {"passed": 139, "failed": 0, "skipped": 4}, "deployment_metrics": {"error_rate": 0.001, "response_time_p95": 190},
     "test_details": PASSING},
    {"release_id": "rel-1-9-6", "version": "v1.9.6", "changes": ["Logging format"],
     "tests": {"passed": 139, "failed": 0, "skipped": 0}, "deployment_metrics": {"error_rate": 0.0, "response_time_p95": 205}},
]

# release_id -> (user, outcome, reason, override confirmed): rita is the release manager
DEMO_DECISIONS = {
    "rel-1-9-6": ("rita", "go", "Clean release, low risk.", False),
    "rel-1-9-9": ("rita", "no_go", "Error rate above 7 %; roll back the thumbnail change.", False),
    "rel-2-0-5": ("rita", "deferred", "Ship after the security review on Thursday.", False),
    "rel-2-0-7": ("rita", "go", "p95 is the export endpoint only, used by 3 customers; accepted.", True),
}


def demo_load_releases(*, users: dict) -> int:
    from agents.models import AgentRun
    from agents.tasks import run_pipeline
    from casework.cases.services import case_assign
    from casework.releases.models import Release
    from casework.releases.services import release_decide, release_submit

    created = 0
    for data in DEMO_RELEASES:
        if Release.objects.filter(release_id=data["release_id"]).exists():
            continue
        release = release_submit(actor="system", data=data, via="demo")
        run = AgentRun.objects.filter(case=release.case, pipeline="releases").latest("id")
        run_pipeline.apply(args=(run.pk,))  # here, now (a worker that got the message first finds it claimed)
        created += 1
        decided = DEMO_DECISIONS.get(release.release_id)
        if decided:
            username, outcome, reason, confirm = decided
            release.refresh_from_db()
            case_assign(actor=users[username], case=release.case, assignee=users[username])
            release_decide(actor=users[username], release=Release.objects.get(pk=release.pk), outcome=outcome,
                           reason=reason, confirm_override=confirm)
    return created
