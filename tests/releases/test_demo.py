"""The demo's releases: made by the pipeline, at every severity, a few decided."""

from __future__ import annotations

import pytest

from casework.releases.demo import DEMO_RELEASES, demo_load_releases
from casework.releases.models import Release, RiskReport

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_demo_makes_twelve_releases_at_every_severity_and_runs_once(rita):
    users = {"rita": rita}
    assert demo_load_releases(users=users) == len(DEMO_RELEASES) == 12

    severities = list(RiskReport.objects.values_list("severity", flat=True))
    assert {s: severities.count(s) for s in ("high", "medium", "low")} == {"high": 5, "medium": 4, "low": 3}
    # Every release got its report; the four a release manager decided say so (issue 22).
    assert RiskReport.objects.values("release").distinct().count() == 12
    decided = Release.objects.filter(case__status="closed")
    assert decided.count() == 4
    assert set(decided.values_list("assessment", flat=True)) == {"decided"}
    assert Release.objects.filter(assessment="filed").count() == 8
    override = Release.objects.get(release_id="rel-2-0-7").case.decisions.get()
    assert override.data["override"] is True
    assert demo_load_releases(users=users) == 0
