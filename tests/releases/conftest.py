"""Release helpers: the seed's example release and variants, submitted through the service;
the detective has run when `submit` returns."""

from __future__ import annotations

import copy

import pytest

from agents.models import AgentRun


def t(name, area, status="passed", critical=False, message=""):
    return {"name": name, "area": area, "status": status, "critical": critical, "message": message}


SEED = {
    "release_id": "rel-2-1-0", "version": "v2.1.0",
    "changes": ["Added payment processing", "Fixed authentication bug"],
    "tests": {"passed": 142, "failed": 2, "skipped": 5},
    "deployment_metrics": {"error_rate": 0.02, "response_time_p95": 450},
    "test_details": [t("test_login", "auth", critical=True),
                     t("test_refund_flow", "payments", "failed", True, "refund total 0.00 != 19.99"),
                     t("test_card_tokenise", "payments", "failed", False, "TimeoutError after 30 s")],
}
LOW = {"release_id": "rel-1-9-8", "version": "v1.9.8", "changes": ["Copy changes"],
       "tests": {"passed": 140, "failed": 0, "skipped": 4},
       "deployment_metrics": {"error_rate": 0.002, "response_time_p95": 210}}
MEDIUM = {"release_id": "rel-2-0-3", "version": "v2.0.3", "changes": ["Tooltip fixes"],
          "tests": {"passed": 98, "failed": 1, "skipped": 2},
          "deployment_metrics": {"error_rate": 0.003, "response_time_p95": 290},
          "test_details": [t("test_tooltip_position", "ui", "failed", False, "off by 2 px")]}


def release(data: dict, **changes) -> dict:
    made = copy.deepcopy(data)
    made.update(changes)
    return made


def submit(data: dict, actor="system"):
    """(release, its latest detective run), re-read."""
    from agents.runtime.pipeline import execute_run
    from casework.releases.models import Release
    from casework.releases.services import release_submit

    made = release_submit(actor=actor, data=data)
    run = AgentRun.objects.filter(case=made.case, pipeline="releases").latest("id")
    if run.status == AgentRun.Status.QUEUED:  # on_commit never fires inside a test's transaction
        execute_run(run.pk)
    made = Release.objects.select_related("case").get(pk=made.pk)
    return made, AgentRun.objects.get(pk=run.pk)


@pytest.fixture
def rita_client(client, rita):
    """The release manager, who decides releases."""
    client.force_login(rita)
    return client
