"""Reading the access log (audit.models.AccessEntry): who looked at a case, for its leads
(casework.cases.visibility.user_leads), and the admins' export per person or per case, as CSV,
from the page (/audit/access.csv) or the command (export_access_log)."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db.models import QuerySet
from django.utils import timezone

from audit.models import AccessEntry
from casework.cases.models import Case

# The panel shows the newest entries of a case, this many at most (a hot case has thousands).
PANEL_CAP = 100
# A case reference as the log keeps it: FRA-000123, REL-2026-0042.
REFERENCE = re.compile(r"^[A-Z][A-Z0-9]{1,9}-[A-Z0-9-]{1,20}$")
COLUMNS = ("at", "username", "user_id", "case_ref", "object_type", "object_id", "via", "path", "correlation_id")


def case_readers(case: Case, *, cap: int = PANEL_CAP) -> tuple[list[AccessEntry], bool]:
    """The newest reads of this case (of its page, tabs, report, attachments), and whether
    there are more than `cap` (the index on (case_ref, -at) answers both at once)."""
    rows = list(AccessEntry.objects.filter(case_ref=case.reference).order_by("-at", "-id")[:cap + 1])
    return rows[:cap], len(rows) > cap


def access_export_entries(params: Mapping[str, str]) -> tuple[QuerySet[AccessEntry], dict[str, str]]:
    """The entries an export asks for: `user` (a username) and/or `case` (a reference), oldest
    first. A missing or bad parameter is a ValidationError naming it."""
    username = (params.get("user") or "").strip()
    reference = (params.get("case") or "").strip().upper()
    if not username and not reference:
        raise ValidationError({"user": "Give user=<username> or case=<reference> (or both)."})
    entries = AccessEntry.objects.all()
    chosen: dict[str, str] = {}
    if username:
        user = User.objects.filter(username=username).first()
        if user is None:
            raise ValidationError({"user": f"No person is named {username[:150]!r}."})
        entries, chosen["user"] = entries.filter(user_id=user.pk), username
    if reference:
        if len(reference) > 32 or not REFERENCE.match(reference):
            raise ValidationError({"case": f"{reference[:40]!r} is not a case reference (like FRA-000123)."})
        entries, chosen["case"] = entries.filter(case_ref=reference), reference
    return entries.order_by("at", "id"), chosen


def access_csv_rows(entries: QuerySet[AccessEntry]) -> Iterator[list[str]]:
    """The header, then one row per entry, read in chunks (an export may hold millions)."""
    yield list(COLUMNS)
    for e in entries.iterator(chunk_size=2000):
        yield [e.at.isoformat(), e.username, "" if e.user_id is None else str(e.user_id), e.case_ref,
               e.object_type, e.object_id, e.via, e.path, e.correlation_id]


def access_export_record_command(chosen: dict[str, str], *, via: str) -> None:
    """An export from the command line is a read too; nobody is signed in, so the entry names
    the command (audit.access.access_record records signed-in people only)."""
    AccessEntry.objects.create(at=timezone.now(), user_id=None, username=f"manage.py {via}"[:150],
                               case_ref=chosen.get("case", ""), object_type="export",
                               object_id=export_id(chosen), via=via, path="")


def export_id(chosen: dict[str, str]) -> str:
    return "&".join(f"{k}={v}" for k, v in sorted(chosen.items()))[:64]


def export_filename(chosen: dict[str, str]) -> str:
    stamp = timezone.now().strftime("%Y%m%dT%H%M%SZ")
    what = "-".join(re.sub(r"[^A-Za-z0-9_.-]", "_", v) for _, v in sorted(chosen.items()))
    return f"access-{what}-{stamp}.csv"
