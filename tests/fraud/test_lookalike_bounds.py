"""The look-alike search reads a bounded set of decided alerts (casework/fraud/similarity.py):
the grid cells near the alert, newest first, at most FRAUD_LOOKALIKE_CELL_CAP per cell and group."""

from __future__ import annotations

import pytest

from casework.fraud.agents.inputs import build_outcome_similarity_input
from casework.fraud.demo_data import demo_alerts
from casework.fraud.models import DecidedVector
from casework.fraud.selectors import SIMILAR_MAX_DISTANCE, feature_distance, similar_decided
from tests.conftest import prepared_statements
from tests.fraud.conftest import CYCLING

pytestmark = pytest.mark.django_db

OUTCOMES = ("confirmed_fraud", "legit", "false_positive")


def _population(make_alert, decide, alice, seeds=(3,)):
    """The demo's archetypes (50 alerts a seed): every third left open, the rest decided."""
    made = []
    for seed in seeds:
        for n, demo in enumerate(demo_alerts(seed=seed)):
            alert = make_alert(**{**demo.row, "account_id": f"S{seed}-{n}"})
            if n % 3:
                decide(alert, alice, outcome=OUTCOMES[n % len(OUTCOMES)])
                made.append((alert, OUTCOMES[n % len(OUTCOMES)]))
    return made


def test_the_cells_find_exactly_the_neighbours_a_full_scan_finds(settings, alice, make_alert, decide):
    settings.FRAUD_LOOKALIKE_CELL_CAP = 10_000  # below the cap: exactly what a full scan finds
    decided = _population(make_alert, decide, alice)
    probes = [make_alert(**{**demo.row, "account_id": f"P-{n}"}) for n, demo in enumerate(demo_alerts(seed=9)[:20])]
    compared = 0
    for probe in probes:
        found = similar_decided(probe, limit=1000)
        expected = {"confirmed": set(), "cleared": set()}
        for alert, outcome in decided:
            if feature_distance(_raw(probe), _raw(alert)) <= SIMILAR_MAX_DISTANCE:
                expected["confirmed" if outcome == "confirmed_fraud" else "cleared"].add(alert.case.reference)
        assert {near.reference for near in found.confirmed} == expected["confirmed"]
        assert {near["reference"] for near in found.cleared} == expected["cleared"]
        assert found.confirmed_count == len(expected["confirmed"])
        assert not found.confirmed_more and not found.cleared_more
        compared += len(expected["confirmed"]) + len(expected["cleared"])
    assert compared > 30  # the population is dense enough for the comparison to mean something


def _raw(alert):
    from casework.fraud.features import FEATURE_NAMES

    return {name: getattr(alert, name) for name in FEATURE_NAMES}


def test_a_full_cell_keeps_the_newest_and_says_the_count_is_a_lower_bound(settings, alice, make_alert, decide):
    settings.FRAUD_LOOKALIKE_CELL_CAP = 3
    alerts = [make_alert(**{**CYCLING, "account_id": f"ACC-{i}",
                            "deposit_withdraw_cycle_days_avg": 1.3 + i * 0.01}) for i in range(5)]
    # Decided from the farthest to the nearest: the three newest decisions are the nearest three.
    for alert in reversed(alerts):
        decide(alert, alice)
    new = make_alert(**{**CYCLING, "account_id": "ACC-NEW", "deposit_withdraw_cycle_days_avg": 1.3})
    found = similar_decided(new, limit=5)
    assert [near.account_id for near in found.confirmed] == ["ACC-0", "ACC-1", "ACC-2"]
    assert found.confirmed_count == 3 and found.confirmed_more
    settings.FRAUD_LOOKALIKE_CELL_CAP = 5
    found = similar_decided(new, limit=5)
    assert found.confirmed_count == 5 and not found.confirmed_more


def test_a_full_cell_of_distant_alerts_still_says_the_count_is_a_lower_bound(settings, alice, make_alert, decide):
    settings.FRAUD_LOOKALIKE_CELL_CAP = 2
    # The same grid cell as the new alert (its three cell features), but 3.2 standardised units
    # away on the VPN share (scale 30): none of them is a look-alike.
    for i in range(3):
        decide(make_alert(**{**CYCLING, "account_id": f"ACC-FAR-{i}", "vpn_usage_pct": 100.0}), alice)
    new = make_alert(**{**CYCLING, "account_id": "ACC-NEW"})
    found = similar_decided(new)
    assert (found.confirmed, found.confirmed_count, found.confirmed_more) == ([], 0, True)
    assert (found.cleared_count, found.cleared_more) == (0, False)
    decide(make_alert(**{**CYCLING, "account_id": "ACC-NEAR"}), alice)
    found = similar_decided(new)
    assert [near.account_id for near in found.confirmed] == ["ACC-NEAR"]
    assert found.confirmed_count == 1 and found.confirmed_more

def test_the_prompt_input_says_when_the_count_is_a_lower_bound():
    capped = build_outcome_similarity_input(CYCLING, similar_confirmed_cases_count_from_system=200,
                                            similar_count_is_lower_bound=True)
    assert capped["similar_confirmed_cases_count_is_lower_bound"] is True
    assert "similar_confirmed_cases_count_is_lower_bound" not in build_outcome_similarity_input(CYCLING, 3)


def test_the_row_follows_the_final_decision(alice, make_alert, decide):
    confirmed = make_alert(**{**CYCLING, "account_id": "ACC-1"})
    cleared = make_alert(**{**CYCLING, "account_id": "ACC-2"})
    make_alert(**{**CYCLING, "account_id": "ACC-3"})  # open: no row
    decision = decide(confirmed, alice)
    decide(cleared, alice, outcome="legit")
    rows = {row.account_id: row for row in DecidedVector.objects.all()}
    assert set(rows) == {"ACC-1", "ACC-2"}
    assert (rows["ACC-1"].confirmed, rows["ACC-1"].reference) == (True, confirmed.case.reference)
    assert (rows["ACC-2"].confirmed, rows["ACC-2"].outcome) == (False, "legit")
    decision.delete()
    assert list(DecidedVector.objects.values_list("account_id", flat=True)) == ["ACC-2"]


@pytest.mark.parametrize("history", [4, 24])
def test_the_search_costs_the_same_queries_at_any_history(history, settings, alice, make_alert, decide,
                                                          django_assert_max_num_queries):
    settings.FRAUD_LOOKALIKE_CELL_CAP = 100  # every one of them found, below the cap
    for i in range(history):
        decide(make_alert(**{**CYCLING, "account_id": f"ACC-{i}", "deposits_count": 30 + i}), alice,
               outcome=OUTCOMES[i % 3])
    new = make_alert(**{**CYCLING, "account_id": "ACC-NEW"})
    # The cells, the linked cases (casework.entities), the patterns, the cleared decisions.
    with django_assert_max_num_queries(4):
        found = similar_decided(new)
    assert found.confirmed_count + found.cleared_count == history


def _searched(alert) -> tuple[str, list]:
    """The look-alike search's own statement and parameters, as it sent them."""
    from django.db import connection

    sent = []

    def keep(execute, sql, params, many, context):
        if "WITH e AS MATERIALIZED" in sql:
            sent.append((sql, params))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(keep):
        similar_decided(alert)
    assert len(sent) == 1
    return sent[0]


def _plan(sql: str, params) -> str:
    """The database's plan for the statement: EXPLAIN on PostgreSQL, EXPLAIN QUERY PLAN on SQLite."""
    from django.db import connection

    explain = "EXPLAIN " if connection.vendor == "postgresql" else "EXPLAIN QUERY PLAN "
    with connection.cursor() as cursor:
        cursor.execute(explain + sql, params)
        return "\n".join(str(row[-1]) for row in cursor.fetchall())


def test_each_cell_is_read_through_the_cell_index_whatever_the_planner_estimates(alice, make_alert, decide):
    """Each (group, cell) range is read through the cell index, newest first, never by a walk of
    the table. On PostgreSQL the pairs reach the database as arrays, so the planner cannot see how
    full a cell is: a history crowded into one cell made it read a sparse cell's range by walking
    the primary key backwards, through the whole table (50 to 220 ms a search at 10^5). The ranges
    are ordered by models.NEWEST_FIRST, which only the cell index gives. SQLite reads one UNION
    ALL branch per pair, through the same index and order."""
    from django.db import connection

    from casework.cases.models import Case, Decision
    from casework.fraud.models import NEWEST_FIRST

    cases = Case.objects.bulk_create([Case(reference=f"FRB-{i:06d}", case_type="fraud_alert", title="history",
                                           status="closed") for i in range(4000)])
    decisions = Decision.objects.bulk_create([Decision(case=case, outcome="legit", reason="history", final=True)
                                              for case in cases])
    # Every decided alert of the history in one far cell, as a busy pattern fills its cell.
    DecidedVector.objects.bulk_create([
        DecidedVector(decision_id=d.pk, case_id=d.case_id, confirmed=bool(i % 2), outcome="legit",
                      reference=f"FRB-{i:06d}", account_id="FAR", cell=990_000,
                      **{f"v{n}": 30.0 for n in range(13)}) for i, d in enumerate(decisions)])
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE fraud_decidedvector")
    decide(make_alert(**{**CYCLING, "account_id": "ACC-NEAR"}), alice)  # the new alert's cell: one row
    new = make_alert(**{**CYCLING, "account_id": "ACC-NEW"})
    sql, params = _searched(new)
    plan = _plan(sql, params)
    assert NEWEST_FIRST in sql
    if connection.vendor == "postgresql":
        assert "fraud_decided_cell_rank" in plan and "pkey" not in plan, plan
    else:
        lines = plan.splitlines()
        reads = [n for n, line in enumerate(lines) if "fraud_decidedvector" in line]
        assert reads and all("USING INDEX fraud_decided_cell_rank" in lines[n] for n in reads), plan
        # Each range comes out of the index newest first: no sort before its LIMIT.
        assert all("TEMP B-TREE" not in lines[n + 1] for n in reads), plan
    assert [near.account_id for near in similar_decided(new).confirmed] == ["ACC-NEAR"]


def test_the_search_reads_one_bounded_range_per_cell_in_one_statement_text_on_postgresql(alice, make_alert):
    """One index range of the newest cap + 1 rows per (group, cell), in one statement. On
    PostgreSQL its text, and so its planning, does not grow with the cells near the alert (a
    UNION ALL of a branch per cell cost more to plan than the rest of a fraud run's statements
    together); SQLite, which has no LATERAL and plans a branch in microseconds, sends one branch
    per pair."""
    from django.db import connection

    from casework.fraud.models import NEWEST_FIRST

    # 6, 12 and 20 cells near these three (the cycle's length is one of the grid's features).
    new = [make_alert(**{**CYCLING, "account_id": f"ACC-{i}", **change}) for i, change in enumerate(
        ({"kyc_face_match_score": 0.0}, {}, {"deposit_withdraw_cycle_days_avg": 30.0}))]
    searched = [_searched(alert) for alert in new]
    if connection.vendor == "postgresql":
        pairs = [len(next(p for p in params if isinstance(p, list))) for _, params in searched]
        assert len({sql for sql, _ in searched}) == 1
        assert len({len(params) for _, params in searched}) == 1  # the pairs travel as two arrays
    else:
        pairs = [sql.count(f"ORDER BY {NEWEST_FIRST} LIMIT") for sql, _ in searched]
        assert pairs == [sql.count(" UNION ALL ") + 1 for sql, _ in searched]
    assert pairs == [12, 24, 40]  # (group, cell): both groups of each cell


def test_a_workers_look_alike_search_is_planned_with_its_values_every_time(worker_prepares, alice, make_alert,
                                                                              decide):
    # A worker prepares what it repeats; the look-alike search is left out, so its plan is made
    # for each alert's own cells (casework/db_unprepared.py), and it finds what it found before.
    _population(make_alert, decide, alice)
    probe = make_alert(**{**CYCLING, "account_id": "PROBE"})
    first = similar_decided(probe, limit=20)
    for _ in range(6):  # past PostgreSQL's five custom plans before a generic one is considered
        again = similar_decided(probe, limit=20)
    assert [n.reference for n in again.confirmed] == [n.reference for n in first.confirmed]
    assert again.confirmed_count == first.confirmed_count and again.cleared_count == first.cleared_count
    if worker_prepares.vendor == "postgresql":
        statements = prepared_statements()
        assert statements  # the other statements were prepared ...
        assert not any("MATERIALIZED" in sql for sql in statements), statements  # ... not the search
