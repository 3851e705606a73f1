"""Reads over entities, mentions and links: each a fixed number of queries, each bounded by an
index range and a cap (never a scan of all history), so the cost per page stays flat as
mentions grow (bench/entities.py).

Every read that shows a person other cases takes `viewer`, whom it is for, and shows, links
and counts only the cases that person may see (casework.cases.visibility, the one rule): an
entity only hidden cases name is not found, and counts leave hidden cases out. FOR_THE_CASE
is the case's own agents, which read what their pipeline needs unfiltered; a read for nobody
(None, an anonymous user) finds nothing. For a person, each index range is read until enough
visible cases are found: the cost grows with how many hidden cases sit between them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from django.core.exceptions import EmptyResultSet, ValidationError
from django.db import connection
from django.db.models import F, FilteredRelation, IntegerField, Q, QuerySet
from django.db.models.expressions import RawSQL
from django.http import Http404
from django.shortcuts import get_object_or_404

from casework.cases.models import Case
from casework.cases.types import CASE_TYPES
from casework.cases.visibility import case_visible, cases_visible_to, sees_every_case, visible_q
from casework.db_unprepared import execute_unprepared
from casework.entities.kinds import KINDS
from casework.entities.models import CaseLink, CaseMerge, Entity, Mention

# The panel: at most this many of the case's entities, each with its newest other cases.
PANEL_ENTITIES = 30
PANEL_PER_ENTITY = 5
# The entity page: its cases, a page at a time, newest first (what a page costs to draw grows
# with this; bench/entities.py); the cases naming an entity are counted up to COUNT_CAP.
ENTITY_CASES = 25
COUNT_CAP = 1000
# The case columns the entity page, the panel and the API show (with the decision joined).
SHOWN = ("reference", "case_type", "title", "status", "created_at")
# The graph: per hop.
GRAPH_FIRST_HOP = 25
GRAPH_PER_NODE = 8
GRAPH_SECOND_HOP = 200
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class _ForTheCase:
    def __repr__(self) -> str:
        return "FOR_THE_CASE"


# The viewer of a read made by the case's own agents (its pipeline): nothing is filtered.
FOR_THE_CASE = _ForTheCase()
NOTHING_SQL = "SELECT NULL WHERE 1 = 0"


def _unfiltered(viewer) -> bool:
    return viewer is FOR_THE_CASE or (getattr(viewer, "is_active", False) and sees_every_case(viewer))


def _visible_ids_sql(viewer) -> tuple[str, list] | None:
    """The rule for a raw query: a subquery of the ids of the cases `viewer` may see, with its
    parameters; None when nothing is filtered (the case's agents, an admin)."""
    if _unfiltered(viewer):
        return None
    try:
        sql, params = cases_visible_to(viewer).values("pk").query.sql_with_params()
    except EmptyResultSet:  # sees no case at all
        return NOTHING_SQL, []
    return sql, list(params)


def _visible_mentions(viewer, mentions: QuerySet[Mention]) -> QuerySet[Mention]:
    return mentions if _unfiltered(viewer) else mentions.filter(visible_q(viewer, prefix="case__"))


def _visible_cases(viewer, cases: QuerySet[Case]) -> QuerySet[Case]:
    return cases if _unfiltered(viewer) else cases_visible_to(viewer, cases)


def _decided(cases: QuerySet[Case]) -> QuerySet[Case]:
    """Cases with their final decision's outcome, time and decider in the same row (one
    LEFT JOIN on the one final decision, not a subquery per column)."""
    return (cases.annotate(final=FilteredRelation("decisions", condition=Q(decisions__final=True)))
            .annotate(decision_outcome=F("final__outcome"), decision_at=F("final__decided_at"),
                      decision_by=F("final__decided_by__username")))


def _labelled(cases) -> dict[int, Case]:
    """id -> case, each with `decision_label` and `fraud_confirmation` for the templates."""
    out = {}
    for case in cases:
        outcome = getattr(case, "decision_outcome", None)
        case.decision_label = case.type_info.outcome_label(outcome) if outcome else ""
        case.fraud_confirmation = is_fraud_confirmation(case)
        out[case.pk] = case
    return out


def is_fraud_confirmation(case: Case) -> bool:
    """The case was decided with an outcome its type counts as confirming fraud."""
    declared = CASE_TYPES[case.case_type].entities
    return bool(declared and getattr(case, "decision_outcome", None) in declared.fraud_outcomes)


def _newest_other_cases(entity_ids: list[int], *, exclude_case_ids: set[int], per_entity: int,
                        viewer) -> list[dict]:
    """Per entity, its newest `per_entity` mentions in other cases `viewer` may see: one query,
    one index range (mention_entity_newest) per entity, however many cases name it (a merchant
    in a hundred thousand cases costs what a device in two does). A UNION ALL of limited
    branches, each wrapped as a derived table: the form both SQLite and PostgreSQL accept."""
    if not entity_ids:
        return []
    table = connection.ops.quote_name(Mention._meta.db_table)
    excluded = sorted(exclude_case_ids) or [0]
    marks = ", ".join(["%s"] * len(excluded))
    visible = _visible_ids_sql(viewer)
    seen = f" AND case_id IN ({visible[0]})" if visible else ""
    branch = (f"SELECT * FROM (SELECT entity_id, case_id, created_at, id FROM {table} "
              f"WHERE entity_id = %s AND case_id NOT IN ({marks}){seen} ORDER BY created_at DESC, id DESC LIMIT %s) "
              f"AS b{{}}")
    sql = " UNION ALL ".join(branch.format(i) for i in range(len(entity_ids)))
    params = [p for pk in entity_ids for p in (pk, *excluded, *(visible[1] if visible else ()), per_entity)]
    with connection.cursor() as cursor:
        execute_unprepared(cursor, sql, params)
        return [{"entity_id": e, "case_id": c, "created_at": at, "id": i} for e, c, at, i in cursor.fetchall()]


@dataclass
class PanelRow:
    entity: Entity
    source: str
    # Other cases naming it, counted up to COUNT_CAP (`counted_all` False: more than that).
    other_count: int
    counted_all: bool = True
    others: list[Case] = field(default_factory=list)


def _named_by_capped(viewer) -> RawSQL:
    """How many cases `viewer` may see name the mention's entity, counted up to COUNT_CAP + 2
    (this case and more than COUNT_CAP others): a correlated count over a limited index range
    (the ORM counts a subquery only in full)."""
    table = connection.ops.quote_name(Mention._meta.db_table)
    entity = connection.ops.quote_name(Mention._meta.get_field("entity").column)
    case = connection.ops.quote_name(Mention._meta.get_field("case").column)
    visible = _visible_ids_sql(viewer)
    seen = f" AND named.{case} IN ({visible[0]})" if visible else ""
    return RawSQL(f"SELECT COUNT(*) FROM (SELECT 1 FROM {table} AS named WHERE named.{entity} = {table}.{entity}"
                  f"{seen} LIMIT %s) AS capped", (*(visible[1] if visible else ()), COUNT_CAP + 2),
                  output_field=IntegerField())


def case_seen_elsewhere(case: Case, *, viewer) -> list[PanelRow]:
    """The case page's "seen in other cases", for `viewer` (who sees this case): each entity the
    case names (flagged ones first), how many other cases they may see name it (up to
    COUNT_CAP; `counted_all` says whether that is all), and the newest of them with status and
    decision. Three queries: the case's mentions with their entities and counts, the newest
    others, their cases."""
    mentions = list(Mention.objects.filter(case=case).select_related("entity__confirmed_fraud_case")
                    .annotate(named_by=_named_by_capped(viewer))
                    .order_by("entity__confirmed_fraud_at", "entity__kind", "entity_id")[:PANEL_ENTITIES])
    # This case counts itself when the viewer sees it (a page's viewer always does).
    own = 1 if _unfiltered(viewer) or case_visible(viewer, case) else 0
    rows = {m.entity_id: PanelRow(_flag_case_hidden(m.entity, viewer), m.source_field or m.source_tool or m.source_agent,
                                  min(m.named_by - own, COUNT_CAP), m.named_by - own <= COUNT_CAP) for m in mentions}
    others = _newest_other_cases([pk for pk, row in rows.items() if row.other_count > 0],
                                 exclude_case_ids={case.pk}, per_entity=PANEL_PER_ENTITY, viewer=viewer)
    cases = _labelled(_decided(Case.objects.filter(pk__in={o["case_id"] for o in others}).only(*SHOWN)))
    for other in sorted(others, key=lambda o: (o["created_at"], o["id"]), reverse=True):
        rows[other["entity_id"]].others.append(cases[other["case_id"]])
    # Flagged entities first (confirmed_fraud_at nulls sort differently per database), then
    # those seen elsewhere, most seen first.
    return sorted(rows.values(), key=lambda r: (not r.entity.confirmed_fraud, -r.other_count,
                                                r.entity.kind, r.entity.pk))


@dataclass(frozen=True)
class Cursor:
    """A place in an entity's mentions, newest first: a mention's (created_at, id), written in
    a URL as "<microseconds since the epoch>-<id>". The page after it (or before it) is one
    index range (mention_entity_newest) however deep it is, where an offset would read and
    skip every row above it."""

    at: datetime
    pk: int

    def __str__(self) -> str:
        return f"{(self.at - EPOCH) // timedelta(microseconds=1)}-{self.pk}"

    @classmethod
    def parse(cls, text: str, *, field: str) -> Cursor:
        micros, _, pk = text.partition("-")
        try:
            if not (micros.isdigit() and pk.isdigit()) or len(text) > 40 or int(pk) >= 2**63:
                raise ValueError(text)
            return cls(EPOCH + timedelta(microseconds=int(micros)), int(pk))
        except (ValueError, OverflowError):  # not two numbers, or past the year 9999
            raise ValidationError({field: "Not a place in the list: use the page's Newer and Older links."}) from None


@dataclass
class EntityPage:
    entity: Entity
    cases: list[Case]
    # How many cases name it, counted up to COUNT_CAP (`counted_all` False: more than that).
    total: int
    counted_all: bool
    timeline: list[dict]
    newer: Cursor | None = None
    older: Cursor | None = None
    first: bool = True


def entity_get_for_user(viewer, pk: int) -> Entity:
    """The entity, when a case `viewer` may see names it; else 404, as if it did not exist.
    Its fraud flag's case is kept only when the viewer may see that case too."""
    entity = get_object_or_404(Entity.objects.select_related("confirmed_fraud_case"), pk=pk)
    if not _visible_mentions(viewer, Mention.objects.filter(entity=entity)).exists():
        raise Http404("No such entity.")
    return _flag_case_hidden(entity, viewer)


def _flag_case_hidden(entity: Entity, viewer) -> Entity:
    """The entity, its fraud flag's case dropped when `viewer` may not see that case: the flag
    stays (a person decided a case naming it as fraud), which case it was does not show."""
    flagged = entity.confirmed_fraud_case
    if flagged is not None and not _unfiltered(viewer) and not case_visible(viewer, flagged):
        entity.confirmed_fraud_case = None
    return entity


def mentions_counted(entity: Entity, *, viewer) -> tuple[int, bool]:
    """How many cases `viewer` may see name the entity, and whether that is all of them:
    counted up to COUNT_CAP, so a merchant in a million cases costs what one in a thousand does."""
    n = _visible_mentions(viewer, Mention.objects.filter(entity=entity))[:COUNT_CAP + 1].count()
    return min(n, COUNT_CAP), n <= COUNT_CAP


def entity_page(entity: Entity, *, viewer, before: Cursor | None = None, after: Cursor | None = None) -> EntityPage:
    """The cases `viewer` may see that name the entity, ENTITY_CASES a page, newest first (the
    newest page, the one older than `before`, or the one newer than `after`), with status and
    decision, and the page's timeline: each case naming it, each decision people made. Three
    queries whatever the page: the page's mentions (one index range), their cases, the capped
    count."""
    mentions = _visible_mentions(viewer, Mention.objects.filter(entity=entity))
    if after is not None:
        mentions = (mentions.filter(created_at__gte=after.at).exclude(created_at=after.at, pk__lte=after.pk)
                    .order_by("created_at", "id"))
    elif before is not None:
        mentions = (mentions.filter(created_at__lte=before.at).exclude(created_at=before.at, pk__gte=before.pk)
                    .order_by("-created_at", "-id"))
    else:
        mentions = mentions.order_by("-created_at", "-id")
    rows = list(mentions.values_list("pk", "case_id", "created_at", "source_field", "source_agent", "source_tool")
                [:ENTITY_CASES + 1])
    more = len(rows) > ENTITY_CASES
    rows = rows[:ENTITY_CASES]
    if after is not None:
        rows.reverse()
    # A page reached from a link has the page it came from on its other side.
    newer = Cursor(rows[0][2], rows[0][0]) if rows and (before is not None or (after is not None and more)) else None
    older = Cursor(rows[-1][2], rows[-1][0]) if rows and (after is not None or more) else None
    total, counted_all = mentions_counted(entity, viewer=viewer)
    by_id = _labelled(_decided(Case.objects.filter(pk__in=[r[1] for r in rows]).only(*SHOWN)))
    cases, timeline = [], []
    for _, case_id, at, source_field, source_agent, source_tool in rows:
        case = by_id[case_id]
        case.named_in = source_field or source_tool or source_agent
        cases.append(case)
        timeline.append({"at": at, "case": case, "what": "named", "source": case.named_in})
        if case.decision_outcome:
            timeline.append({"at": case.decision_at, "case": case, "what": "decided",
                             "outcome": case.decision_label, "by": case.decision_by or "system"})
    timeline.sort(key=lambda e: e["at"], reverse=True)
    return EntityPage(entity, cases, total, counted_all, timeline, newer, older,
                      first=before is None and (after is None or not more))


def case_links(case: Case, *, viewer) -> list[dict]:
    """The case's links both ways to cases `viewer` may see, with the other case, newest first
    (one query)."""
    links = CaseLink.objects.filter(Q(from_case=case) | Q(to_case=case))
    if not _unfiltered(viewer):
        links = links.filter((Q(from_case=case) & visible_q(viewer, prefix="to_case__"))
                             | (Q(to_case=case) & visible_q(viewer, prefix="from_case__")))
    links = links.select_related("from_case", "to_case", "created_by").order_by("-created_at", "-id")[:100]
    out = []
    for link in links:
        outgoing = link.from_case_id == case.pk
        label = link.get_kind_display() if outgoing else {"related": "Related", "duplicate": "Has duplicate",
                                                             "parent": "Child of"}[link.kind]
        out.append({"link": link, "other": link.to_case if outgoing else link.from_case, "label": label})
    return out


def case_merged_into(case: Case) -> CaseMerge | None:
    return CaseMerge.objects.select_related("survivor", "merged_by").filter(merged=case).first()


def case_survivor(case: Case, *, hops: int = 5) -> Case | None:
    """The case a merged case lives on in: the one it was merged into, followed if that was
    merged in turn (at most `hops`); None when the case was not merged."""
    survivor = None
    for _ in range(hops):
        merge = CaseMerge.objects.select_related("survivor").filter(merged_id=(survivor or case).pk).first()
        if merge is None:
            break
        survivor = merge.survivor
    return survivor


def case_merged_ids(case_id: int) -> list[int]:
    """The cases merged into this one (their audit trail is part of its history)."""
    return list(CaseMerge.objects.filter(survivor_id=case_id).values_list("merged_id", flat=True))


def related_case_ids(case: Case, *, limit: int = 50) -> list[int]:
    """Cases a person tied to this one: linked either way, merged into it, or the one it was
    merged into. What the matchers that look for related records add to their candidates."""
    ids: list[int] = []
    for a, b in CaseLink.objects.filter(Q(from_case=case) | Q(to_case=case)).values_list(
            "from_case_id", "to_case_id")[:limit]:
        ids.append(b if a == case.pk else a)
    for a, b in CaseMerge.objects.filter(Q(merged=case) | Q(survivor=case)).values_list(
            "merged_id", "survivor_id")[:limit]:
        ids.append(b if a == case.pk else a)
    return list(dict.fromkeys(ids))[:limit]


# The matchers that look for related records (fraud look-alikes, transaction similarity)
# add at most this many linked decided cases, newest link first, ahead of their neighbours.
LINKED_SHOWN = 5


# How many of a case's newest links (each way) a matcher reads to find its linked decided ones.
LINKS_READ = 50


def linked_sql(case_sql: str = "%s") -> str:
    """A derived table of the cases a person linked to one case (either way), for a matcher's
    own raw query: columns other_case_id, kind, outgoing (1: the case's own link), created_at,
    id; the newest LINKS_READ of each way, each one index range (case_link_unique, and the
    to_case index), however many links the project holds. `case_sql` is the case's id: a
    placeholder (its parameter given twice, see linked_params) or a scalar subquery. Join it
    to the matcher's table on other_case_id, order by created_at DESC, id DESC (link_kind
    turns kind and outgoing into words). Raw SQL, like the matchers' own: the ORM's subquery
    annotations cost a look-alike search 4 ms of CPU to build."""
    table = connection.ops.quote_name(CaseLink._meta.db_table)
    branch = ("SELECT * FROM (SELECT {other} AS other_case_id, kind, {out} AS outgoing, created_at, id FROM {table} "
              "WHERE {mine} = {case} ORDER BY created_at DESC, id DESC LIMIT {n}) AS {name}")
    return (branch.format(other="to_case_id", out=1, table=table, mine="from_case_id", case=case_sql, n=LINKS_READ,
                          name="links_out")
            + " UNION ALL "
            + branch.format(other="from_case_id", out=0, table=table, mine="to_case_id", case=case_sql,
                            n=LINKS_READ, name="links_in"))


def linked_params(*case_params) -> list:
    """The parameters of linked_sql: the case's own, once per way."""
    return [*case_params, *case_params]


def link_kind(kind: str, outgoing) -> str:
    """What the other case is to this one, in a word: related, duplicate (either way), parent
    (it is this case's parent) or child (this case is its parent)."""
    if kind == "parent":
        return "child" if outgoing else "parent"
    return kind


def related_cases(case: Case, *, viewer, limit: int = 20) -> dict:
    """What find_related_cases answers: linked cases, and the other cases that name the same
    entities (newest first per entity), each with status and decision: those `viewer` may see
    (FOR_THE_CASE: a pipeline's read)."""
    panel = case_seen_elsewhere(case, viewer=viewer)
    linked = {c.pk: c for c in _decided(_visible_cases(viewer, Case.objects.filter(pk__in=related_case_ids(case))))}
    return {
        "reference": case.reference,
        "linked": [case_summary(c) for c in linked.values()][:limit],
        "entities": [{"kind": row.entity.kind, "value": row.entity.display,
                      "confirmed_fraud": row.entity.confirmed_fraud,
                     "confirmed_fraud_case": getattr(row.entity.confirmed_fraud_case, "reference", None),
                      # Counted up to COUNT_CAP; "_complete" False: more than that.
                      "other_case_count": row.other_count, "other_case_count_complete": row.counted_all,
                      "other_cases": [case_summary(c) for c in row.others]}
                     for row in panel][:limit],
    }


def case_summary(case: Case) -> dict:
    outcome = getattr(case, "decision_outcome", None)
    return {"reference": case.reference, "type": case.case_type, "title": case.title[:120],
            "status": case.status, "created_at": case.created_at.isoformat(),
            "decision": case.type_info.outcome_label(outcome) if outcome else None,
            "confirms_fraud": is_fraud_confirmation(case)}


# --- The graph --------------------------------------------------------------------------


def _case_node(case: Case, *, centre: bool = False) -> dict:
    outcome = getattr(case, "decision_outcome", None)
    label = f"{case.reference}" + (f" · {case.type_info.outcome_label(outcome)}" if outcome else "")
    return {"data": {"id": f"c{case.pk}", "label": label, "type": "case", "case_type": case.case_type,
                     "status": case.status, "fraud": is_fraud_confirmation(case), "centre": centre,
                     "url": f"/cases/{case.reference}/"}}


def _entity_node(entity: Entity, *, centre: bool = False) -> dict:
    return {"data": {"id": f"e{entity.pk}", "label": f"{entity.kind_label}: {entity.display}", "type": "entity",
                     "kind": entity.kind, "fraud": entity.confirmed_fraud, "centre": centre,
                     "url": f"/entities/{entity.pk}/"}}


def _edge(source: str, target: str, label: str = "") -> dict:
    return {"data": {"id": f"{source}-{target}", "source": source, "target": target, "label": label}}


def graph_for_case(case: Case, *, viewer) -> dict:
    """Two hops from a case `viewer` sees: its entities, and the other cases they may see that
    name them (plus the cases it is linked to that they may see). Four queries."""
    entities = [m.entity for m in Mention.objects.filter(case=case).select_related("entity")
                .order_by("entity_id")[:GRAPH_FIRST_HOP]]
    others = _newest_other_cases([e.pk for e in entities], exclude_case_ids={case.pk}, per_entity=GRAPH_PER_NODE,
                                 viewer=viewer)
    links = list(CaseLink.objects.filter(Q(from_case=case) | Q(to_case=case)).values_list(
        "from_case_id", "to_case_id", "kind")[:GRAPH_FIRST_HOP])
    ids = {o["case_id"] for o in others} | {a for a, _, _ in links} | {b for _, b, _ in links} | {case.pk}
    cases = {c.pk: c for c in _decided(_visible_cases(viewer, Case.objects.filter(pk__in=ids)))}
    links = [(a, b, kind) for a, b, kind in links if a in cases and b in cases]
    nodes = [_case_node(cases[case.pk], centre=True)] + [_entity_node(e) for e in entities]
    nodes += [_case_node(c) for pk, c in cases.items() if pk != case.pk]
    edges = [_edge(f"c{case.pk}", f"e{e.pk}") for e in entities]
    edges += [_edge(f"c{o['case_id']}", f"e{o['entity_id']}") for o in others]
    edges += [_edge(f"c{a}", f"c{b}", kind) for a, b, kind in links]
    return {"nodes": nodes, "edges": edges}


def graph_for_entity(entity: Entity, *, viewer) -> dict:
    """Two hops from an entity: the newest cases naming it that `viewer` may see, and the
    entities those cases name. Three queries."""
    case_ids = list(_visible_mentions(viewer, Mention.objects.filter(entity=entity)).order_by("-created_at", "-id")
                    .values_list("case_id", flat=True)[:GRAPH_FIRST_HOP])
    cases = {c.pk: c for c in _decided(Case.objects.filter(pk__in=case_ids))}
    second = list(Mention.objects.filter(case_id__in=case_ids).exclude(entity=entity).select_related("entity")
                  .order_by("case_id", "entity_id")[:GRAPH_SECOND_HOP])
    neighbours = {m.entity_id: m.entity for m in second}
    nodes = [_entity_node(entity, centre=True)] + [_case_node(c) for c in cases.values()]
    nodes += [_entity_node(e) for e in neighbours.values()]
    edges = [_edge(f"c{pk}", f"e{entity.pk}") for pk in cases]
    edges += [_edge(f"c{m.case_id}", f"e{m.entity_id}") for m in second]
    return {"nodes": nodes, "edges": edges}


def confirmed_fraud_links(case: Case, *, exclude_kinds: tuple[str, ...] = (), limit: int = 20) -> list[dict]:
    """Other cases whose fraud a person confirmed and that share an entity with this one: per
    confirming case, its reference, type and what it shares ("device DEV-1"), the entities in
    id order (the first 100 shared). One query, raw SQL like the matchers' own: the fraud
    pipeline asks for every alert, and building it through the ORM (three joins, select_related)
    was 7% of a worker's CPU (issue 29)."""
    quote = connection.ops.quote_name
    excluded = " AND e.kind NOT IN (" + ", ".join(["%s"] * len(exclude_kinds)) + ")" if exclude_kinds else ""
    sql = (f"SELECT e.kind, e.display, c.id, c.reference, c.case_type FROM {quote(Mention._meta.db_table)} AS m "
           f"JOIN {quote(Entity._meta.db_table)} AS e ON e.id = m.entity_id "
           f"JOIN {quote(Case._meta.db_table)} AS c ON c.id = e.confirmed_fraud_case_id "
           f"WHERE m.case_id = %s AND e.confirmed_fraud_at IS NOT NULL AND e.confirmed_fraud_case_id <> %s{excluded} "
           f"ORDER BY m.entity_id LIMIT 100")
    with connection.cursor() as cursor:
        cursor.execute(sql, [case.pk, case.pk, *exclude_kinds])
        rows = cursor.fetchall()
    found: dict[int, dict] = {}
    for kind, display, other_id, reference, case_type in rows:
        entry = found.setdefault(other_id, {"reference": reference, "case_type": case_type,
                                            "type_label": CASE_TYPES[case_type].label, "shares": []})
        entry["shares"].append(f"{KINDS.get(kind, kind).lower()} {display}")
    return list(found.values())[:limit]
