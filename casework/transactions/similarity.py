"""Nearest past investigations over feature vectors (seed 003's similarity_tool).

The vector (FEATURES below) is nine numbers in [0, 1] taken from the pattern analysis: the
four pattern scores, and five yes/no signals. The distance is Euclidean over them.

How it scales to 100,000 past investigations
---------------------------------------------
Each completed investigation stores its vector and a *bucket*: the five yes/no signals as a
string of bits ("10110"), in an indexed column. A query reads only the investigations whose
bucket is within Hamming distance 1 of its own (6 of the 32 buckets, each bucket's newest
read from the index txn_inv_bucket_newest), newest first and at most TXN_SIMILARITY_CANDIDATES
of them (default 250), and computes the exact distance for those in Python. The work per query is
therefore bounded by the cap, not by the number of past investigations: with 100,000 spread
over the 32 buckets, about 19,000 fall in the 6 buckets, of which the newest 250 are scored.
(With the earlier cap of 5,000, bench/growth.py measured 4 ms of CPU a query at 1,000
investigations and 24 ms at 10,000: the cost per investigation grew until the cap was
reached; at 250 it is reached at about 1,300 and stays there.) The price of the cap: of the
neighbouring buckets, only the most recent investigations are considered. Two investigations whose signals differ in two or more
ways are at least sqrt(2) apart and are never "similar" at MAX_DISTANCE anyway, so the bucket
filter loses no match that would have been shown. Past a few million rows, or with richer
vectors, this becomes an approximate index (pgvector's HNSW on PostgreSQL).

Investigations whose cases a person linked to the asking one (casework.entities: related,
duplicate, parent, child) and decided come first, at any distance, with `linked_as`: at most
LINKED_SHOWN, newest link first, in one more query through the link table's indexes.
"""

from __future__ import annotations

import math

SIGNALS = ("foreign", "card_not_present", "high_risk_mcc", "new_device", "test_charges")
PATTERNS = ("velocity", "amount", "geography", "mcc")
FEATURES = (*PATTERNS, *SIGNALS)
MAX_DISTANCE = 1.2


def vector_of(pattern_results: dict) -> list[float]:
    scores = {p["type"]: p["score"] for p in pattern_results.get("patterns", [])}
    signals = dict(pattern_results.get("signals", {}))
    amount = next((p for p in pattern_results.get("patterns", []) if p["type"] == "amount"), None)
    signals["test_charges"] = bool(amount and "test charge" in amount["detail"])
    return [float(scores.get(name, 0.0)) for name in PATTERNS] + [1.0 if signals.get(s) else 0.0 for s in SIGNALS]


def bucket_of(vector: list[float]) -> str:
    return "".join("1" if v >= 0.5 else "0" for v in vector[len(PATTERNS):])


def neighbour_buckets(bucket: str) -> list[str]:
    flips = ["".join(("0" if c == "1" else "1") if i == n else c for i, c in enumerate(bucket))
             for n in range(len(bucket))]
    return [bucket, *flips]


def nearest(vector: list[float], *, exclude_pk: int | None = None, limit: int = 5,
            max_distance: float = MAX_DISTANCE) -> list[dict]:
    """The nearest completed investigations, nearest first, with their distance and outcome.

    `exclude_pk` is the investigation asking: neither it nor any other investigation of its
    transaction (an earlier one, when a transaction is investigated again) is "similar": it
    is the same transaction, at distance 0, and its decision is not independent evidence."""
    from django.conf import settings

    from casework.cases.models import Decision
    from casework.transactions.models import Investigation

    scored = []
    for pk, features in _candidates(bucket_of(vector), exclude_pk, settings.TXN_SIMILARITY_CANDIDATES):
        if len(features) != len(vector):
            continue
        distance = math.dist(vector, features)
        if distance <= max_distance:
            scored.append((distance, pk))
    linked = _linked(vector, exclude_pk) if exclude_pk is not None else []
    shown = {m["pk"] for m in linked}
    scored.sort()
    top = [(distance, pk) for distance, pk in scored if pk not in shown][:limit]
    rows = Investigation.objects.select_related("case", "transaction").in_bulk([pk for _, pk in top])
    outcomes = dict(Decision.objects.filter(case_id__in=[r.case_id for r in rows.values()], final=True)
                    .values_list("case_id", "outcome"))
    return [{k: v for k, v in m.items() if k != "pk"} for m in linked] + [
        {"reference": rows[pk].case.reference, "transaction_id": rows[pk].transaction.transaction_id,
         "distance": round(distance, 3), "severity": rows[pk].severity,
         "outcome": outcomes.get(rows[pk].case_id, "")} for distance, pk in top]


def _candidates(bucket: str, exclude_pk: int | None, cap: int) -> list[tuple[int, list]]:
    """The newest `cap` completed investigations of the bucket and its neighbours (not the
    asking one's transaction): each bucket's newest `cap` by its own index range
    (txn_inv_bucket_newest), then the newest `cap` of those. One query, whose cost is the cap's,
    however many investigations the buckets hold (an IN over the buckets read them all and
    sorted them: 26 ms at 100,000, bench/growth.py)."""
    import json

    from django.db import connection

    from casework.db_unprepared import execute_unprepared
    from casework.transactions.models import Investigation

    inv = connection.ops.quote_name(Investigation._meta.db_table)
    mine, params = "", []
    if exclude_pk is not None:
        mine = f" AND id <> %s AND transaction_id NOT IN (SELECT transaction_id FROM {inv} WHERE id = %s)"
    parts = []
    for n, b in enumerate(neighbour_buckets(bucket)):
        parts.append(f"SELECT * FROM (SELECT id, features FROM {inv} WHERE status = %s AND feature_bucket = %s"
                     f"{mine} ORDER BY id DESC LIMIT %s) AS b{n}")
        params += [Investigation.Status.COMPLETED, b, *([exclude_pk, exclude_pk] if mine else []), cap]
    sql = f"SELECT id, features FROM ({' UNION ALL '.join(parts)}) AS u ORDER BY id DESC LIMIT %s"  # noqa: S608
    with connection.cursor() as cursor:
        execute_unprepared(cursor, sql, [*params, cap])
        rows = cursor.fetchall()
    return [(pk, json.loads(f) if isinstance(f, str) else f) for pk, f in rows]


def _linked(vector: list[float], asking_pk: int) -> list[dict]:
    """The decided investigations whose cases a person linked to the asking one's, newest link
    first, at most LINKED_SHOWN, each with its distance (None without a comparable vector) and
    what it is to the asking case (`linked_as`). Not the asking transaction's own. One query
    (entities.linked_sql)."""
    import json

    from django.db import connection

    from casework.cases.models import Case, Decision
    from casework.entities.selectors import LINKED_SHOWN, link_kind, linked_params, linked_sql
    from casework.transactions.models import Investigation, Transaction

    q = connection.ops.quote_name
    inv, case, txn, decision = (q(m._meta.db_table) for m in (Investigation, Case, Transaction, Decision))
    asking_case = f"(SELECT case_id FROM {inv} WHERE id = %s)"
    sql = (f"SELECT i.id, i.features, c.reference, t.transaction_id, i.severity, d.outcome, l.kind, l.outgoing "
           f"FROM ({linked_sql(asking_case)}) AS l JOIN {inv} AS i ON i.case_id = l.other_case_id "
           f"JOIN {case} AS c ON c.id = i.case_id JOIN {txn} AS t ON t.id = i.transaction_id "
           f"JOIN {decision} AS d ON d.case_id = i.case_id AND d.final = %s "
           f"WHERE i.transaction_id <> (SELECT transaction_id FROM {inv} WHERE id = %s) "
           f"ORDER BY l.created_at DESC, l.id DESC")
    with connection.cursor() as cursor:
        cursor.execute(sql, [*linked_params(asking_pk), True, asking_pk])
        rows = cursor.fetchall()
    out, seen = [], set()
    for pk, features, reference, transaction_id, severity, outcome, kind, outgoing in rows:
        if pk in seen:  # linked both ways, or twice: its newest link says what it is
            continue
        seen.add(pk)
        if len(out) == LINKED_SHOWN:
            break
        features = json.loads(features) if isinstance(features, str) else features
        distance = round(math.dist(vector, features), 3) if len(features or []) == len(vector) else None
        out.append({"pk": pk, "reference": reference, "transaction_id": transaction_id, "distance": distance,
                    "severity": severity, "outcome": outcome, "linked_as": link_kind(kind, outgoing)})
    return out
