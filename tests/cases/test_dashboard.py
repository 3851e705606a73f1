"""The dashboard at / (issue 14): figures as SQL aggregates, at most 17 queries whatever the
data size, agreement between agents and people per type, a manager's own section."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.db import connection
from django.utils import timezone

from agents.models import AgentCall, AgentRun
from casework.cases.dashboard import selectors
from casework.cases.models import Case, Decision
from casework.releases.models import Release, RiskReport
from casework.support.models import Customer, Ticket

pytestmark = pytest.mark.django_db

TYPES = ["fraud_alert", "support_ticket", "access_change", "transaction_investigation", "release_risk"]
PRIORITIES = ["critical", "high", "medium", "low"]


def make_cases(n: int, *, now=None, decided_every: int = 3, actor=None) -> list[Case]:
    """n cases of every type and priority, opened over the last 20 days; every third decided."""
    now = now or timezone.now()
    cases = Case.objects.bulk_create([
        Case(reference=f"T-{i:06d}", case_type=TYPES[i % 5], title=f"Case {i}", priority=PRIORITIES[i % 4],
             due_at=now + timedelta(hours=(i % 7) - 3))
        for i in range(n)])
    for i, case in enumerate(cases):
        created = now - timedelta(days=i % 20, hours=i % 5)
        # Never in the future: late in the (UTC) day a case closed "an hour after now" fell on
        # tomorrow, outside the per-day series.
        closed = min(created + timedelta(hours=1 + i % 10), now) if i % decided_every == 0 else None
        Case.objects.filter(pk=case.pk).update(created_at=created, closed_at=closed,
                                               status="closed" if closed else "in_progress")
    Decision.objects.bulk_create([
        Decision(case=case, outcome=case.type_info.outcomes[0][0], reason="test", decided_by=actor)
        for i, case in enumerate(cases) if i % decided_every == 0])
    runs = AgentRun.objects.bulk_create([AgentRun(case=case, pipeline="fraud", status="completed")
                                         for case in cases[:50]])
    AgentCall.objects.bulk_create([
        AgentCall(run=run, key="orchestrator", name="orchestrator", status="error" if i % 5 == 0 else "ok",
                  output={"risk_level": "high"}, output_verdict="high", cost_usd=Decimal("0.002"))
        for i, run in enumerate(runs)])
    return cases


def test_a_dashboard_render_takes_at_most_20_queries_whatever_the_data_size(
        alice_client, alice, django_assert_max_num_queries):
    make_cases(300, actor=alice)
    # 15, the person's teams (the navigation's cache is cold here), and on PostgreSQL two to set
    # the planner's random_page_cost for the agreement's queries and set it back
    # (casework/cases/dashboard/selectors.py); and two for the budgets' panels: spend per case
    # type, and the cases at their budget (casework/budgets).
    with django_assert_max_num_queries(20):
        response = alice_client.get("/")
    assert response.status_code == 200
    html = response.content.decode()
    for chart in ("by-type", "by-status", "by-priority", "ages", "per-day", "ttd", "breaches", "agents"):
        assert f'id="chart-{chart}"' in html, chart
    assert 'id="dashboard-data"' in html and "<script>" not in html  # data as JSON, no inline script


def test_the_open_cases_are_counted_by_type_status_priority_age_and_breach():
    now = timezone.now()
    make_cases(40, now=now)
    figures = selectors.open_cases(now)
    open_count = Case.objects.exclude(status__in=["closed", "resolved"]).count()
    assert figures["total"] == open_count == sum(n for _, n in figures["ages"])
    assert sum(n for _, n in figures["by_priority"]) == open_count
    assert figures["breached"] == Case.objects.exclude(status="closed").filter(due_at__lt=now).count() > 0


def test_cases_opened_decided_and_breached_per_day():
    now = timezone.now()
    make_cases(40, now=now)
    Case.objects.filter(pk__in=Case.objects.order_by("id").values("pk")[:3]).update(sla_breached_at=now)
    series = selectors.per_day(now)
    assert len(series["labels"]) == selectors.DASHBOARD_DAYS and series["labels"][-1] == now.date().isoformat()
    assert sum(series["opened"]) == 40 and sum(series["decided"]) == 14 and series["breached"][-1] == 3
    assert series["opened"][-1] == 2  # cases 0 and 20 were opened now


def test_time_to_decision_gives_median_and_p90_per_type():
    now = timezone.now()
    for i, hours in enumerate([1, 2, 3, 4, 10]):
        case = Case.objects.create(reference=f"R-{i}", case_type="release_risk", title="r")
        Case.objects.filter(pk=case.pk).update(created_at=now - timedelta(hours=hours + 1),
                                               closed_at=now - timedelta(hours=1), status="closed")
    [row] = selectors.time_to_decision(now)
    assert row["type"] == "Release risk" and row["n"] == 5
    # percentile_cont: the median of 1,2,3,4,10 is 3; p90 interpolates between 4 and 10: 7.6.
    assert row["median"] == 3.0 and row["p90"] == 7.6, connection.vendor


def test_agent_error_rate_and_cost_per_case_per_day():
    now = timezone.now()
    make_cases(50, now=now)
    agents = selectors.agent_costs(now)
    assert agents["calls"] == 50 and agents["errors"] == 10 and agents["error_rate_total"] == 20.0
    assert agents["error_rate"][-1] == 20.0 and agents["cost_per_case"][-1] == 0.002


def _ticket(case: Case, action: str, n: int) -> None:
    customer, _ = Customer.objects.get_or_create(customer_id="c-1")
    Ticket.objects.create(case=case, ticket_id=f"TKT-{n:08d}", customer=customer, recommended_action=action)


def _release(case: Case, severity: str, n: int) -> None:
    release = Release.objects.create(case=case, release_id=f"r-{n}", version="1.0")
    RiskReport.objects.create(report_id=f"RR-{n}", release=release, severity=severity, findings=[])


def _decide(case: Case, outcome: str, user) -> None:
    Decision.objects.create(case=case, outcome=outcome, reason="looked at it", decided_by=user)
    Case.objects.filter(pk=case.pk).update(status="closed", closed_at=timezone.now())


def test_agreement_per_type_and_the_disagreements_each_linked(alice_client, alice):
    cases = {}
    for n, (case_type, agent, outcome) in enumerate([
        ("support_ticket", "escalate_human", "escalated"),   # agrees
        ("support_ticket", "auto_respond", "replied"),       # agrees
        ("support_ticket", "auto_respond", "escalated"),     # disagrees
        ("release_risk", "high", "no_go"),                   # agrees
        ("release_risk", "high", "go"),                      # disagrees
        ("release_risk", "medium", "go"),                    # no clear recommendation: not counted
        ("fraud_alert", "critical", "false_positive"),       # disagrees
    ]):
        case = Case.objects.create(reference=f"A-{n}", case_type=case_type, title=f"agreement {n}")
        if case_type == "support_ticket":
            _ticket(case, agent, n)
        elif case_type == "release_risk":
            _release(case, agent, n)
        else:
            run = AgentRun.objects.create(case=case, pipeline="fraud", status="completed")
            AgentCall.objects.create(run=run, key="orchestrator", name="orchestrator", status="ok",
                                     output={"risk_level": agent}, output_verdict=agent)
        _decide(case, outcome, alice)
        cases[n] = case
    result = selectors.agreement(timezone.now())
    rows = {row.type_label: (row.decided, row.with_recommendation, row.agreed, row.rate) for row in result["rows"]}
    assert rows == {"Fraud alert": (1, 1, 0, 0), "Support ticket": (3, 3, 2, 67), "Release risk": (3, 2, 1, 50)}
    assert sorted(d["case"].reference for d in result["disagreements"]) == ["A-2", "A-4", "A-6"]
    html = alice_client.get("/").content.decode()
    assert 'href="/cases/A-4/"' in html and "Hold (high risk)" in html and "Release approved" in html
    assert "67 %" in html


def test_a_manager_sees_their_own_section_and_their_teams_figures(client, mona):
    # mona is in no team: her figures are zeros (tests/cases/test_need_to_know_dashboard.py).
    client.force_login(mona)
    response = client.get("/")
    html = response.content.decode()
    assert 'id="manager-requests"' in html and "Nothing waiting for you." in html
    assert 'id="chart-by-type"' in html and response.context["figures"]["open"]["total"] == 0


def test_the_dashboard_link_is_in_the_navigation(alice_client):
    assert 'href="/" aria-current="page">Dashboard</a>' in alice_client.get("/").content.decode()


@pytest.mark.django_db
def test_a_query_failing_under_the_planner_setting_raises_its_own_error():
    """The agreement's queries run with random_page_cost 1.1, set back afterwards. A query that
    fails in a transaction is the error raised (not "transaction is aborted" from setting it
    back), and once the transaction is rolled back the session has the setting it had."""
    from django.db import DatabaseError, connection, transaction

    from casework.cases.dashboard.selectors import _index_lookups_priced_as_they_are

    def cost():
        with connection.cursor() as cursor:
            cursor.execute("SELECT current_setting('random_page_cost')")
            return cursor.fetchone()[0]

    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM cases_case LIMIT 1")  # a working query before
    before = cost() if connection.vendor == "postgresql" else None
    with pytest.raises(DatabaseError) as raised, transaction.atomic():
        with _index_lookups_priced_as_they_are(), connection.cursor() as cursor:
            cursor.execute("SELECT no_such_column FROM cases_case")
    assert "no_such_column" in str(raised.value)
    if connection.vendor == "postgresql":
        assert cost() == before
        with _index_lookups_priced_as_they_are():
            assert cost() == "1.1"
        assert cost() == before
