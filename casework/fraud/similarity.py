"""Similarity maths: which past confirmed-fraud cases look like this alert, by their features.

`similar_confirmed_cases` finds the past cases decided as confirmed fraud whose alerts look
most like this one, by their 13 features:

1. Each feature is put on a comparable scale: money, counts, days and ratios through
   log1p (a deposit total of 10,000 vs 20,000 differs as much as 100,000 vs 200,000), the
   face-match score and the VPN percentage as they are; then each is divided by a fixed
   reference spread (`Feature.scale` in features.py: the standard deviation of the
   transformed feature over the demo population, rounded).
2. The distance is Euclidean over those 13 standardised values.
3. A case is similar when its distance is at most SIMILAR_MAX_DISTANCE (3.0). On the
   demo population 93% of pairs of the same fraud pattern fall within it, and 0.2% of
   pairs across patterns or between fraud and legitimate accounts.

Fixed reference spreads rather than spreads recomputed from the current data: the
distance between two alerts then never changes because other cases were decided, the
threshold means the same on the first day as after a year, and it works with a single
confirmed case.

The cost per alert does not grow with the history (DESIGN.md, "Cost per case stays flat"):

4. Every decided alert's 13 standardised values are stored once, when the decision is
   written (DecidedVector, in the decision's transaction), with the grid cell of three of
   them (side SIMILAR_MAX_DISTANCE).
5. A search reads only the cells the ball of radius max_distance around the new alert
   touches (a vector within the distance differs by at most the distance on every
   coordinate, so no true neighbour lies outside them), and of each cell only the newest
   LOOKALIKE_CELL_CAP decided alerts of each group (confirmed, cleared), plus one more to
   tell a full cell: one query, one index range per cell, at most 27 cells.
6. In that same query the database computes each candidate's squared distance, keeps those
   within max_distance**2 (and not linked, step 7), ranks them (nearest first, ties: the
   older decision first) and returns only the nearest `limit` of each group, with the
   group's count and whether a cell held more than the cap. Python decodes a handful of
   rows whatever the history: a cell filling up no longer costs it more (bench/growth.py).

7. Cases a person linked to this one (casework.entities: related, duplicate, parent, child)
   and decided come first, whatever their distance, marked with the link's kind: at most
   LINKED_SHOWN, newest link first, read in one query before the others (`_linked`, through
   the link table's indexes; a case's links do not grow with the history); the search of
   step 6 leaves them out so that each is shown and counted once.

Below the cap the result is exactly what a scan of every decided alert gives (tests show
it). When a cell holds more than the cap, its older alerts are not read: the nearest
shown are the nearest among the newest, and the count is a lower bound ("N or more";
`Lookalikes.confirmed_more`), which the prompt states.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

from django.conf import settings
from django.db import connection
from django.db.models import QuerySet

from casework.db_unprepared import execute_unprepared
from casework.fraud.features import FEATURE_NAMES, FEATURES
from casework.fraud.models import (
    CELL_INDEXES,
    CELL_SIDE,
    NEWEST_FIRST,
    Alert,
    DecidedVector,
    KnowledgePattern,
    cell_key,
)

SIMILAR_MAX_DISTANCE = 3.0
CONFIRMED_FRAUD = "confirmed_fraud"
# Outcomes a person gave that say "not fraud": a look-alike of one of these is less likely fraud.
CLEARED_OUTCOMES = ("legit", "false_positive")
CLEARED_LABELS = {"legit": "marked legit", "false_positive": "dismissed as false positive"}
VECTOR_COLUMNS = tuple(f"v{i}" for i in range(len(FEATURES)))


def _alerts() -> QuerySet[Alert]:
    return Alert.objects.select_related("account", "case", "case__assignee")


def _vector(values) -> list[float]:
    return [feature.transform(value) / feature.scale for feature, value in zip(FEATURES, values, strict=True)]


def feature_distance(a: dict, b: dict) -> float:
    """Distance between two alerts' features (dicts or Alerts' `.features`)."""
    return math.dist(_vector([a[n] for n in FEATURE_NAMES]), _vector([b[n] for n in FEATURE_NAMES]))


def decided_vector_row(decision, alert_values) -> DecidedVector:
    """The DecidedVector of a final decision, from its alert's (reference, account id, 13
    raw features). Not saved; the signal and the benchmark's bulk load save it."""
    reference, account_id, *values = alert_values
    vector = _vector(values)
    cells = tuple(int(vector[i] // CELL_SIDE) for i in CELL_INDEXES)
    return DecidedVector(decision_id=decision.pk, case_id=decision.case_id,
                         confirmed=decision.outcome == CONFIRMED_FRAUD, outcome=decision.outcome,
                         reference=reference, account_id=account_id, cell=cell_key(cells),
                         **dict(zip(VECTOR_COLUMNS, vector, strict=True)))


def decided_vector_sync(decision) -> None:
    """Keep the decision's DecidedVector in step with it: stored while the decision is a final
    fraud decision with a look-alike outcome, removed otherwise (run in its transaction)."""
    wanted = decision.final and decision.outcome in (CONFIRMED_FRAUD, *CLEARED_OUTCOMES)
    values = (Alert.objects.filter(case_id=decision.case_id)
              .values_list("case__reference", "account__account_id", *FEATURE_NAMES).first()) if wanted else None
    if values is None:
        DecidedVector.objects.filter(decision_id=decision.pk).delete()
        return
    row = decided_vector_row(decision, values)
    DecidedVector.objects.update_or_create(
        decision_id=decision.pk, defaults={f.attname: getattr(row, f.attname)
                                           for f in DecidedVector._meta.concrete_fields if not f.primary_key})


def _cells(origin: list[float], max_distance: float) -> list[int]:
    """The grid cells the ball of radius max_distance around origin touches."""
    ranges = []
    for i in CELL_INDEXES:
        low = max(0, math.floor((origin[i] - max_distance) / CELL_SIDE))
        high = max(0, math.floor((origin[i] + max_distance) / CELL_SIDE))
        ranges.append([(k, max(0.0, k * CELL_SIDE - origin[i], origin[i] - (k + 1) * CELL_SIDE))
                       for k in range(low, high + 1)])
    return sorted({cell_key(tuple(k for k, _ in combo)) for combo in itertools.product(*ranges)
                   if sum(gap * gap for _, gap in combo) <= max_distance * max_distance})


@dataclass(frozen=True)
class _Near:
    case_id: int
    reference: str
    account_id: str
    outcome: str
    distance: float
    link: str = ""


@dataclass(frozen=True)
class _Found:
    """One group's look-alikes: the nearest (up to the limit asked), how many lie within the
    distance, and whether a nearby cell held more than the cap (the count is then a lower bound)."""

    nearest: list[_Near]
    count: int
    more: bool


def _near_sql(cells: int, groups: int, limit: int | None, excluded: int) -> str:
    """The search's one statement (module steps 5 and 6): one index range per (group, cell), its
    newest cap + 1 rows; each row numbered newest first within its cell and its squared distance
    computed; then only what Python needs: the nearest `limit` of each group, and each group's
    first row that is not near (with a limit of 0 still the nearest one), so that every group
    read says how many are near and whether a cell was full: every row carries both."""
    table = connection.ops.quote_name(DecidedVector._meta.db_table)
    read = ", ".join(("decision_id", "case_id", "confirmed", "cell", "reference", "account_id", "outcome",
                      *VECTOR_COLUMNS))
    # Newest first as NEWEST_FIRST, the cell index's last column: no other index gives that order
    # (the primary key gives decision_id's), so each range is read through the cell index.
    newest = f"{NEWEST_FIRST} LIMIT %s"
    if connection.vendor == "postgresql":
        # One statement text whatever the number of cells: the (group, cell) pairs as two
        # arrays, each pair's range through LATERAL. Its planning costs the same for 2 pairs or
        # 54; a UNION ALL of one branch per pair was planned on every search, and that planning
        # was more than half the server's CPU of a fraud run (bench/README.md, issue 29).
        ranges = (f"SELECT d.*, row_number() OVER (PARTITION BY d.confirmed, d.cell ORDER BY d.decision_id DESC)"
                  f" AS rn FROM unnest(%s::boolean[], %s::integer[]) AS g(confirmed, cell) CROSS JOIN LATERAL"
                  f" (SELECT {read} FROM {table} WHERE confirmed = g.confirmed AND cell = g.cell AND case_id <> %s"
                  f" ORDER BY {newest}) AS d")
        others = " AND case_id <> ALL(%s::bigint[])"
    else:  # SQLite has no LATERAL, and plans a branch in microseconds
        ranges = " UNION ALL ".join(
            f"SELECT *, row_number() OVER (ORDER BY decision_id DESC) AS rn FROM (SELECT {read} FROM {table}"
            f" WHERE confirmed = %s AND cell = %s AND case_id <> %s ORDER BY {newest}) AS c{n}"
            for n in range(cells * groups))
        others = f" AND case_id NOT IN ({', '.join(['%s'] * excluded)})" if excluded else ""
    d2 = " + ".join(f"(v{i} - %s) * (v{i} - %s)" for i in range(len(VECTOR_COLUMNS)))
    shown = " AND k <= %s" if limit is not None else ""
    return (f"WITH e AS MATERIALIZED (SELECT u.*, {d2} AS d2 FROM ({ranges}) AS u) "
            f"SELECT confirmed, near, k, d2, case_id, reference, account_id, outcome, total, more FROM ("
            f"SELECT *, row_number() OVER (PARTITION BY confirmed, near ORDER BY d2, decision_id) AS k,"
            f" sum(near) OVER (PARTITION BY confirmed) AS total, max(full_cell) OVER (PARTITION BY confirmed) AS more"
            f" FROM (SELECT decision_id, case_id, confirmed, reference, account_id, outcome, d2,"
            f" CASE WHEN rn <= %s AND d2 <= %s{others} THEN 1 ELSE 0 END AS near,"
            f" CASE WHEN rn > %s THEN 1 ELSE 0 END AS full_cell FROM e) AS f) AS g"
            f" WHERE (near = 1{shown}) OR (near = 0 AND k = 1)")


def _near(alert: Alert, max_distance: float, *, confirmed_only: bool = False, cap: int | None = None,
          limit: int | None = None, excluded: frozenset[int] = frozenset()) -> dict[bool, _Found]:
    """Confirmed (True) and cleared (False): the decided alerts within max_distance of this one
    among the newest `cap` of each group in each nearby cell, but for the `excluded` cases;
    nearest first (ties: the older decision first), up to `limit` (all when None), with how
    many there are; `more` when a cell held more than the cap. One query, whose rows do not
    grow with how full the cells are: the distances are computed, filtered and ranked in the
    database."""
    cap = cap or settings.FRAUD_LOOKALIKE_CELL_CAP
    origin = _vector([getattr(alert, name) for name in FEATURE_NAMES])
    groups = (True,) if confirmed_only else (True, False)
    cells = _cells(origin, max_distance)
    params: list = [value for value in origin for _ in range(2)]
    pairs = list(itertools.product(groups, cells))
    if connection.vendor == "postgresql":  # _near_sql: the pairs as two arrays
        params += [[group for group, _ in pairs], [cell for _, cell in pairs], alert.case_id or 0, cap + 1]
        params += [cap, max_distance * max_distance, sorted(excluded), cap]
    else:
        for group, cell in pairs:
            params += [group, cell, alert.case_id or 0, cap + 1]  # one more tells a full cell
        params += [cap, max_distance * max_distance, *sorted(excluded), cap]
    params += [max(limit, 1)] if limit is not None else []  # one row at least carries the count
    rows = []
    if cells:
        with connection.cursor() as cursor:
            execute_unprepared(cursor, _near_sql(len(cells), len(groups), limit, len(excluded)), params)
            rows = cursor.fetchall()
    nearest: dict[bool, list] = {group: [] for group in groups}
    count = dict.fromkeys(groups, 0)
    more = dict.fromkeys(groups, False)
    for confirmed, near, k, d2, case_id, reference, account_id, outcome, total, full in rows:
        confirmed = bool(confirmed)
        count[confirmed], more[confirmed] = int(total), bool(full)
        if near and (limit is None or k <= limit):
            nearest[confirmed].append((k, _Near(case_id, reference, account_id, outcome, math.sqrt(d2))))
    return {group: _Found([n for _, n in sorted(nearest[group], key=lambda item: item[0])], count[group], more[group])
            for group in groups}


def _linked(alert: Alert) -> tuple[list[_Near], list[_Near]]:
    """(confirmed, cleared): the decided alerts whose cases a person linked to this alert's
    case, at any distance, each with what it is to this one (related, duplicate, parent,
    child); at most LINKED_SHOWN, newest link first. One query (entities.linked_sql)."""
    from casework.entities.selectors import LINKED_SHOWN, link_kind, linked_params, linked_sql

    if not alert.case_id:
        return [], []
    table = connection.ops.quote_name(DecidedVector._meta.db_table)
    columns = ", ".join(f"dv.{c}" for c in ("case_id", "reference", "account_id", "outcome", "confirmed",
                                             *VECTOR_COLUMNS))
    sql = (f"SELECT {columns}, l.kind, l.outgoing FROM ({linked_sql()}) AS l JOIN {table} AS dv "
           f"ON dv.case_id = l.other_case_id ORDER BY l.created_at DESC, l.id DESC")
    with connection.cursor() as cursor:
        cursor.execute(sql, linked_params(alert.case_id))
        rows = cursor.fetchall()
    origin = _vector([getattr(alert, name) for name in FEATURE_NAMES])
    found: dict[bool, list[_Near]] = {True: [], False: []}
    seen: set[int] = set()
    for case_id, reference, account_id, outcome, confirmed, *vector, kind, outgoing in rows:
        if case_id in seen:  # linked both ways, or twice: its newest link says what it is
            continue
        seen.add(case_id)
        if len(seen) > LINKED_SHOWN:
            break
        found[bool(confirmed)].append(_Near(case_id, reference, account_id, outcome, math.dist(origin, vector),
                                            link_kind(kind, outgoing)))
    return found[True], found[False]


def _distances(alert: Alert, max_distance: float, limit: int | None = None) -> tuple[list[tuple[int, float]], int]:
    """(alert id, distance) of the nearest confirmed-fraud alerts within max_distance, nearest
    first (up to `limit`; all when None), and how many lie within it."""
    confirmed = _near(alert, max_distance, confirmed_only=True, limit=limit)[True]
    ids = dict(Alert.objects.filter(case_id__in=[n.case_id for n in confirmed.nearest])
               .values_list("case_id", "pk")) if confirmed.nearest else {}
    return [(ids[n.case_id], n.distance) for n in confirmed.nearest if n.case_id in ids], confirmed.count


def similar_confirmed_cases(
    alert: Alert, *, limit: int = 5, max_distance: float = SIMILAR_MAX_DISTANCE,
) -> list[tuple[Alert, float]]:
    """The nearest past alerts whose cases were decided as confirmed fraud, with distances."""
    near, _ = _distances(alert, max_distance, limit)
    alerts = _alerts().in_bulk([pk for pk, _ in near])
    return [(alerts[pk], round(distance, 3)) for pk, distance in near]


def similar_confirmed_count(alert: Alert, *, max_distance: float = SIMILAR_MAX_DISTANCE) -> int:
    """How many past confirmed-fraud cases are similar to this alert."""
    return _distances(alert, max_distance, 0)[1]


def similar_confirmed(alert: Alert, *, limit: int = 5, pattern_limit: int = 3,
                      max_distance: float = SIMILAR_MAX_DISTANCE) -> tuple[list[tuple[Alert, float]], int,
                                                                          list[KnowledgePattern]]:
    """Nearest cases, their count and their patterns from ONE bounded read of the confirmed-fraud
    alerts (the pipeline needs all three for every alert)."""
    near, count = _distances(alert, max_distance, limit)
    alerts = _alerts().in_bulk([pk for pk, _ in near])
    cases = [(alerts[pk], round(distance, 3)) for pk, distance in near]
    wanted = [a.case_id for a, _ in cases[:pattern_limit]]
    found = {p.case_id: p for p in KnowledgePattern.objects.select_related("case", "account")
             .filter(case_id__in=wanted)}
    return cases, count, [found[case_id] for case_id in wanted if case_id in found]


def similar_confirmed_patterns(alert: Alert, *, limit: int = 3) -> list[KnowledgePattern]:
    """The knowledge patterns captured on the nearest similar confirmed-fraud cases, nearest
    first (for outcome_similarity's explanation and the Similar Cases tab)."""
    near = [similar.case_id for similar, _ in similar_confirmed_cases(alert, limit=limit)]
    found = {p.case_id: p for p in KnowledgePattern.objects.select_related("case", "account")
             .filter(case_id__in=near)}
    return [found[case_id] for case_id in near if case_id in found]


@dataclass(frozen=True)
class Lookalike:
    """A past decided alert near this one, or linked to it by a person: enough to name it to
    an agent or a person. `link` is what it is to this case (related, duplicate, parent,
    child), "" when only its features brought it."""

    case_id: int
    reference: str
    account_id: str
    distance: float
    link: str = ""


@dataclass(frozen=True)
class PatternSaid:
    """What a knowledge pattern captured on a past case says (KnowledgePattern's fields)."""

    case_id: int
    behavioral_pattern: str
    one_sentence_description: str


@dataclass(frozen=True)
class Lookalikes:
    """What the pipeline shows its agents about past decided look-alikes of one alert."""

    # The linked confirmed-fraud cases (up to LINKED_SHOWN, newest link first), then the
    # nearest others (up to `limit`).
    confirmed: list[Lookalike]
    confirmed_count: int  # all confirmed-fraud cases within the distance, and the linked ones
    patterns: list[PatternSaid]  # captured on the first `pattern_limit` of them
    cleared: list[dict]  # the same for cleared cases, each with its decision (and `linked_as`)
    cleared_count: int
    # A nearby cell held more decided alerts than LOOKALIKE_CELL_CAP: the counts are lower
    # bounds ("N or more") and the nearest are the nearest among the newest.
    confirmed_more: bool = False
    cleared_more: bool = False


def similar_decided(alert: Alert, *, limit: int = 5, pattern_limit: int = 3,
                    max_distance: float = SIMILAR_MAX_DISTANCE) -> Lookalikes:
    """similar_confirmed and similar_cleared from ONE bounded read of the decided alerts near
    this one (see the module's steps 4 to 6) and one of the decided alerts linked to it (step
    7: first, marked with the link), then the shown cleared cases' decisions and the first
    confirmed cases' patterns: at most four queries per pipeline run, and the same rows read,
    at any history size. (Building model instances through select_related for the nearest
    alerts cost a fraud run about 5 ms of CPU; bench/README.md.)"""
    from audit.rowsql import values_in
    from casework.cases.models import Decision

    linked_confirmed, linked_cleared = _linked(alert)
    found = _near(alert, max_distance, limit=limit,
                  excluded=frozenset(n.case_id for n in (*linked_confirmed, *linked_cleared)))

    def shown(linked: list[_Near], others: _Found) -> tuple[list[Lookalike], int]:
        return ([Lookalike(n.case_id, n.reference, n.account_id, round(n.distance, 3), n.link)
                 for n in (*linked, *others.nearest)], len(linked) + others.count)

    nearest, confirmed_count = shown(linked_confirmed, found[True])
    shown_cleared, cleared_count = shown(linked_cleared, found[False])
    wanted = [near.case_id for near in nearest[:pattern_limit]]
    # Both reads compiled once per number of ids (audit.rowsql.values_in): their query building
    # through the ORM was 6% of a worker's CPU.
    patterns = {row[0]: PatternSaid(*row) for row in values_in(
        "look-alike patterns", lambda: KnowledgePattern.objects.values_list(
            "case_id", "behavioral_pattern", "one_sentence_description"), "case_id", wanted)}
    decisions = {row[0]: row for row in values_in(
        "look-alike cleared decisions", lambda: Decision.objects.filter(final=True).values_list(
            "case_id", "outcome", "decided_by__username", "decided_at", "reason"),
        "case_id", [near.case_id for near in shown_cleared])}
    cleared = []
    for near in shown_cleared:
        if near.case_id not in decisions:
            continue
        _, outcome, decided_by, decided_at, reason = decisions[near.case_id]
        cleared.append({"reference": near.reference, "account_id": near.account_id, "distance": near.distance,
                        "outcome": outcome, "outcome_label": CLEARED_LABELS.get(outcome, outcome),
                        "decided_by": decided_by or "system", "decided_at": decided_at.isoformat(),
                        "reason": reason[:300], **({"linked_as": near.link} if near.link else {})})
    return Lookalikes(confirmed=nearest, confirmed_count=confirmed_count,
                      patterns=[patterns[case_id] for case_id in wanted if case_id in patterns],
                      cleared=cleared, cleared_count=cleared_count,
                      confirmed_more=found[True].more, cleared_more=found[False].more)


def similar_cleared(alert: Alert, *, limit: int = 5,
                    max_distance: float = SIMILAR_MAX_DISTANCE) -> tuple[list[dict], int]:
    """Past look-alikes a person cleared (marked legit or dismissed as a false positive),
    nearest first, each with its decision: (up to `limit` of them, how many in all). Knowledge
    capture learns from every outcome; these lower the next look-alike's fraud likelihood."""
    found = similar_decided(alert, limit=limit, pattern_limit=0, max_distance=max_distance)
    return found.cleared, found.cleared_count


def known_fraud_links(account) -> list[dict]:
    """Accounts that share a device or an IP address with this one and whose fraud case a
    person confirmed, each with what they share: what the network agent's known_fraud_links
    counts. Two queries (the shared identifiers, then the confirmed accounts among them)."""
    from casework.fraud.models import AccountLink

    mine = list(AccountLink.objects.filter(account=account).values_list("kind", "value"))
    if not mine:
        return []
    shared: dict[int, set[str]] = {}
    others = AccountLink.objects.none()
    for kind in ("device", "ip"):
        values = [v for k, v in mine if k == kind]
        if values:
            others = others | AccountLink.objects.filter(kind=kind, value__in=values).exclude(account=account)
    for account_id, kind, value in others.values_list("account_id", "kind", "value"):
        shared.setdefault(account_id, set()).add(f"{'device' if kind == 'device' else 'IP'} {value}")
    confirmed = (Alert.objects.filter(account_id__in=list(shared), case__decisions__final=True,
                                      case__decisions__outcome=CONFIRMED_FRAUD)
                 .select_related("account", "case").order_by("account__account_id").distinct())
    seen: dict[int, dict] = {}
    for alert in confirmed:
        seen.setdefault(alert.account_id, {"account_id": alert.account.account_id, "reference": alert.case.reference,
                                           "shares": sorted(shared[alert.account_id])})
    return list(seen.values())
