"""The case page's timeline: the case's audit entries as rows a person can read.

An agent run writes about 26 entries (queued, each agent call and tool call, the messages and
status changes its agents make, its end). By default they fold into one row per run that says
what ran, how it ended, when, for how long, how many calls and tools, and which failed; people's
actions stay rows of their own. `?timeline=people` keeps only people's actions, `?timeline=agents`
only the agents' side (runs still folded: each run row opens to its entries).

Everything is worked out from the audit entries alone: the case domain does not read the
agent runtime's tables, and an audit entry outlives what it describes.

Paged, so that a case's page and its poll cost the same with ten entries or a million
(DESIGN.md, "Cost per case stays flat"): a page is the newest CASE_TIMELINE_PAGE entries
before a cursor (`before`, an entry id; index audit_entry_case_newest), read in one query.
A run whose first entry lies below the page's lower edge would fold into a misleading half
row, so the page then reaches down to that run's first entry (one more query; a run is a
few dozen entries). The poll sends the newest entry id it shows (`after`); when no entry of
the case is newer, it is answered 204 after one index lookup and the page stays as it is.

How an entry finds its run:
1. the run's own entries (queued, attached, waiting, completed, failed, cancelled ...) name it
   as their object (agents.agentrun, object_id = the run's id);
2. an agent call's entry (agent.call_completed / agent.call_failed) carries `data.run`;
3. a tool call's entry (agent.tool_called) names its agent call as object, whose entry says the run;
4. any other entry not made by a person that shares a run's correlation id (what the run's
   agents did to the case: status changes, messages, reports) joins the run whose entries
   surround it (several runs queued by one request share the request's correlation id).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import cached_property

from django.conf import settings
from django.db.models import Q, QuerySet, Subquery
from django.db.models.functions import Coalesce

from audit.models import AuditEntry
from casework.cases.merges import case_merged_ids
from casework.cases.models import Case

SHOW_CHOICES = (("all", "All"), ("people", "People"), ("agents", "Agents"))
SHOWS = {key for key, _ in SHOW_CHOICES}

RUN_OBJECT = "agents.agentrun"
CALL_OBJECT = "agents.agentcall"
CALL_ACTIONS = ("agent.call_completed", "agent.call_failed")
TOOL_ACTION = "agent.tool_called"
# A run's status entries, as `agent.run_<status>`; the words each status reads as.
RUN_STATUS_WORDS = {
    "queued": "queued",
    "attached": "queued",
    "running": "running",
    "waiting": "waiting for a person",
    "waiting_approval": "waiting for approval",
    "resumed": "running again after a person's answer",
    "approval_expired": "ended: approval expired",
    "completed": "completed",
    "completed_with_errors": "completed with errors",
    "failed": "failed",
    "timed_out": "timed out",
    "budget_reached": "waiting: the case's budget is reached",
    "budget_resumed": "queued again: the budget was raised",
    "stopped": "stopped by a person",
    "cancelled": "ended when the case was closed",
}
# Statuses after which the run did no more work of its own (its duration ends there).
RUN_RESTING = {"waiting", "waiting_approval", "approval_expired", "completed", "completed_with_errors", "failed",
               "timed_out", "cancelled", "budget_reached", "stopped"}


def show_parse(value: str | None) -> str:
    """The filter asked for, or "all" for anything else (a stale or mistyped link)."""
    return value if value in SHOWS else "all"


def entry_is_person(entry: AuditEntry) -> bool:
    """A person did this: a signed-in user, or an employee answering through a signed link."""
    return entry.actor_type == AuditEntry.ActorType.USER or entry.actor.startswith("employee:")


def duration_words(delta: timedelta) -> str:
    seconds = max(delta.total_seconds(), 0.0)
    if seconds < 0.1:
        return "under 0.1 s"
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 60:
        return f"{seconds:.0f} s"
    minutes, seconds = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {seconds} s" if seconds else f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    return f"{hours // 24} days {hours % 24} h"


@dataclass
class RunRow:
    """One agent run, folded: its entries oldest first, and what a person wants to know."""

    run_id: str
    entries: list[AuditEntry] = field(default_factory=list)
    is_run = True

    @property
    def first_id(self) -> int:
        return self.entries[0].pk

    @property
    def started(self) -> datetime:
        return self.entries[0].timestamp

    @property
    def timestamp(self) -> datetime:
        return self.started

    def _data(self, key: str) -> str:
        for entry in self.entries:
            if entry.object_type == RUN_OBJECT and entry.data.get(key):
                return str(entry.data[key])
        return ""

    @property
    def pipeline(self) -> str:
        return self._data("pipeline") or "agent"

    @property
    def mode(self) -> str:
        return self._data("mode")

    @property
    def mode_words(self) -> str:
        return self.mode.replace("_", " ")

    @property
    def requested_by(self) -> str:
        """Who asked for the run, when a person did (a re-run, a submitted form)."""
        for entry in self.entries:
            if entry.action == "agent.run_queued":
                return entry.actor if entry_is_person(entry) else ""
        return ""

    @cached_property
    def _status_entries(self) -> list[AuditEntry]:
        return [e for e in self.entries if e.object_type == RUN_OBJECT and e.action.startswith("agent.run_")]

    @cached_property
    def status(self) -> str:
        statuses = [e.action.removeprefix("agent.run_") for e in self._status_entries]
        statuses = [s for s in statuses if s in RUN_STATUS_WORDS and s != "attached"]
        if statuses and statuses[-1] not in ("queued",):
            return statuses[-1]
        return "running" if self.calls else "queued"

    @property
    def status_words(self) -> str:
        words = RUN_STATUS_WORDS.get(self.status, self.status.replace("_", " "))
        if self.status == "failed":
            error = self._end_error
            return f"failed: {error}" if error else words
        return words

    @cached_property
    def _end_error(self) -> str:
        ends = [e for e in self._status_entries if e.action == f"agent.run_{self.status}"]
        return str(ends[-1].data.get("error") or "") if ends else ""

    @property
    def ok(self) -> bool:
        return self.status in ("completed", "waiting", "waiting_approval", "resumed", "queued", "running") \
            and not self.failures

    @property
    def duration(self) -> str:
        """From queued to where the run came to rest (waiting, done, failed); still going: so far."""
        end = next((e for e in self._status_entries if e.action.removeprefix("agent.run_") in RUN_RESTING),
                   self.entries[-1])
        return duration_words(end.timestamp - self.started)

    @cached_property
    def calls(self) -> list[AuditEntry]:
        return [e for e in self.entries if e.action in CALL_ACTIONS]

    @cached_property
    def tools(self) -> list[AuditEntry]:
        return [e for e in self.entries if e.action == TOOL_ACTION]

    @cached_property
    def failures(self) -> list[str]:
        """Each failed agent call and tool call, named with its error."""
        named = []
        for entry in self.entries:
            if entry.action == "agent.call_failed":
                error = str(entry.data.get("error") or "failed")
                named.append(f"{entry.actor.removeprefix('agent:')} ({error[:160]})")
            elif entry.action == TOOL_ACTION and entry.data.get("success") is False:
                kind = entry.data.get("error_type") or "failed"
                named.append(f"tool {entry.data.get('tool', '?')} ({kind})")
        return named


def _run_of(entry: AuditEntry, call_runs: dict[str, str]) -> str | None:
    if entry.object_type == RUN_OBJECT and entry.action.startswith("agent.run_"):
        return entry.object_id
    if entry.action in CALL_ACTIONS and entry.data.get("run") is not None:
        return str(entry.data["run"])
    if entry.action == TOOL_ACTION and entry.object_type == CALL_OBJECT:
        return call_runs.get(entry.object_id)
    return None


def timeline_fold(entries: list[AuditEntry]) -> list[AuditEntry | RunRow]:
    """Entries (any order) -> rows newest first: each run's entries folded into a RunRow placed
    where the run began; every other entry a row of its own."""
    entries = sorted(entries, key=lambda e: e.pk)
    call_runs = {e.object_id: str(e.data["run"]) for e in entries
                 if e.action in CALL_ACTIONS and e.object_type == CALL_OBJECT and e.data.get("run") is not None}
    runs: dict[str, RunRow] = {}
    loose: list[AuditEntry] = []
    for entry in entries:
        run_id = _run_of(entry, call_runs)
        if run_id is None:
            loose.append(entry)
        else:
            runs.setdefault(run_id, RunRow(run_id)).entries.append(entry)

    # Step 4: the run's agents' other entries, by correlation id, into the run that surrounds them.
    spans: dict[str, list[tuple[int, int, RunRow]]] = {}
    for run in runs.values():
        # Entries the run's worker wrote carry the run's correlation id (the queued entry
        # carries the request's, which is usually the same).
        for correlation in {e.correlation_id for e in run.entries if e.correlation_id}:
            spans.setdefault(correlation, []).append((run.entries[0].pk, run.entries[-1].pk, run))
    rows: list[AuditEntry | RunRow] = []
    for entry in loose:
        host = None
        if entry.correlation_id and not entry_is_person(entry):
            host = next((run for first, last, run in spans.get(entry.correlation_id, ())
                         if first <= entry.pk <= last), None)
        if host is None:
            rows.append(entry)
        else:
            host.entries.append(entry)
    for run in runs.values():
        run.entries.sort(key=lambda e: e.pk)
        rows.append(run)
    rows.sort(key=lambda row: row.first_id if isinstance(row, RunRow) else row.pk, reverse=True)
    return rows


PERSON = Q(actor_type=AuditEntry.ActorType.USER) | Q(actor__startswith="employee:")  # entry_is_person
RUN_STARTS = ("agent.run_queued", "agent.run_attached")


def _case_ids(case: Case) -> list[int]:
    # A duplicate merged into this case brought its history: its entries read here too.
    return [case.pk, *case_merged_ids(case.pk)]


def timeline_entries(case: Case, show: str = "all", *, case_ids: list[int] | None = None) -> QuerySet[AuditEntry]:
    """The case's entries a filter reads (the agents filter reads all: a run's row keeps the
    person's entry that queued it, and people's other rows are dropped after folding)."""
    entries = AuditEntry.objects.filter(case_id__in=case_ids or _case_ids(case))
    return entries.filter(PERSON) if show == "people" else entries


@dataclass
class TimelinePage:
    rows: list[AuditEntry | RunRow]
    older: int | None  # the `before` of the next older page; None on the oldest page
    newest: int | None  # the newest entry id on the page (the poll's `after`)


def _cut_runs(entries: list[AuditEntry]) -> set[str]:
    """Runs with entries on the page whose first entry is not on it."""
    call_runs = {e.object_id: str(e.data["run"]) for e in entries
                 if e.action in CALL_ACTIONS and e.object_type == CALL_OBJECT and e.data.get("run") is not None}
    present = {_run_of(e, call_runs) for e in entries} - {None}
    started = {e.object_id for e in entries if e.object_type == RUN_OBJECT and e.action in RUN_STARTS}
    return present - started


def timeline_page(case: Case, *, show: str = "all", before: int | None = None,
                  limit: int | None = None) -> TimelinePage:
    """One page of the case page's timeline rows, newest first (see the module's paging).

    all: people's actions and one folded row per run (plus any other entry, e.g. a system's);
    people: only what people did; agents: everything but what people did, runs folded."""
    limit = limit or settings.CASE_TIMELINE_PAGE
    case_ids = _case_ids(case)
    base = timeline_entries(case, show, case_ids=case_ids)
    read = base.filter(id__lt=before) if before is not None else base
    entries = list(read.order_by("-id")[:limit + 1])
    more = len(entries) > limit
    entries = entries[:limit]
    if more and show != "people":
        cut = _cut_runs(entries)
        if cut:
            oldest = entries[-1].pk
            start = (AuditEntry.objects.filter(case_id__in=case_ids, object_type=RUN_OBJECT, object_id__in=sorted(cut),
                                               action__in=RUN_STARTS, id__lt=oldest)
                     .order_by("id").values("id")[:1])
            below = base.filter(id__lt=Subquery(start)).order_by("-id").values("id")[:1]
            # Down to the run's first entry, plus the entry below it if any (it says whether
            # an older page remains, and is left for that page): one query.
            reach = list(base.filter(id__lt=oldest, id__gte=Coalesce(Subquery(below), Subquery(start)))
                         .order_by("-id"))
            starts = [e.pk for e in reach if e.object_type == RUN_OBJECT and e.action in RUN_STARTS
                      and e.object_id in cut]
            if starts:
                more = reach[-1].pk < min(starts)
                entries += reach[:-1] if more else reach
    newest = entries[0].pk if entries else None
    older = entries[-1].pk if more and entries else None
    if show == "people":
        return TimelinePage(entries, older, newest)
    rows = timeline_fold(entries)
    if show == "agents":
        rows = [row for row in rows if isinstance(row, RunRow) or not entry_is_person(row)]
    return TimelinePage(rows, older, newest)


def timeline_rows(case: Case, *, show: str = "all", before: int | None = None,
                  limit: int | None = None) -> list[AuditEntry | RunRow]:
    """The rows of one page of the timeline (timeline_page), newest first."""
    return timeline_page(case, show=show, before=before, limit=limit).rows


def timeline_has_news(case: Case, *, show: str = "all", after: int) -> bool:
    """Whether the case has an entry newer than `after` for this filter: the poll's one read."""
    return timeline_entries(case, show).filter(id__gt=after).exists()


def timeline_context(case: Case, show: str | None, *, before: int | None = None) -> dict:
    """What cases/_timeline.html needs, for the page and for its fragment."""
    show = show_parse(show)
    page = timeline_page(case, show=show, before=before)
    return {"timeline": page.rows, "timeline_show": show, "timeline_choices": SHOW_CHOICES,
            "timeline_older": page.older, "timeline_newest": page.newest, "timeline_before": before}
