"""The access log: every read of sensitive data on record (audit.models.AccessEntry).

A read is recorded where it happens, with `access_record`, or by the middleware for every page
and API operation that shows one case (a GET answered 200 whose URL names a case's `reference`,
or an entity's `entity_id`), unless its view says it is no read of its own
(`access_not_recorded`: the timeline's poll, a count). Inside a request the entries wait in a
list and go to the database in one INSERT when the response is closed, after the server has
sent it: they never hold up the page. Outside a request (a command's export) they are written
at once.

An entry that cannot be written is logged in full, at ERROR, with the reason: the log line is
then the record.
"""

from __future__ import annotations

import logging
from contextvars import ContextVar

from django.db import DatabaseError
from django.utils import timezone

from audit.context import get_correlation_id
from audit.models import AccessEntry

logger = logging.getLogger(__name__)

_pending: ContextVar[list[AccessEntry] | None] = ContextVar("access_pending", default=None)


def access_record(user, *, via: str, object_type: str = "case", case_ref: str = "", object_id: str = "",
                  path: str = "") -> None:
    """Record that `user` read this (a case by `case_ref`; another object by type and id)."""
    if not getattr(user, "is_authenticated", False):
        return
    entry = AccessEntry(at=timezone.now(), user_id=user.pk, username=user.get_username()[:150],
                        case_ref=(case_ref or "")[:32], object_type=object_type[:40],
                        object_id=str(object_id or "")[:64], via=via[:100], path=(path or "")[:300],
                        correlation_id=get_correlation_id()[:64])
    pending = _pending.get()
    if pending is None:
        _write([entry])
    else:
        pending.append(entry)


def access_record_cases(user, case_refs, *, via: str, path: str = "") -> None:
    """One entry per case a listing or an export showed in full (a CSV row, a report)."""
    for ref in case_refs:
        access_record(user, via=via, case_ref=ref, path=path)


def access_not_recorded(view):
    """Marks a view that shows a case but is no read of its own (a poll for news, a count): the
    middleware records nothing for it."""
    view.access_not_recorded = True
    return view


def _write(entries: list[AccessEntry]) -> None:
    try:
        AccessEntry.objects.bulk_create(entries)
    except DatabaseError as exc:  # the reads happened: the log line is their record then
        for entry in entries:
            logger.error("access entry not written (%s): %s read %s %s %s via %s at %s", exc, entry.username,
                         entry.object_type, entry.case_ref, entry.object_id, entry.via, entry.at.isoformat())


def _view_opts_out(match) -> bool:
    func = match.func
    for candidate in (func, getattr(func, "cls", None), getattr(func, "view_class", None)):
        if candidate is not None and getattr(candidate, "access_not_recorded", False):
            return True
    return False


def _read_of(request, response) -> dict | None:
    """What a GET answered 200 showed, from its URL: one case, or one entity."""
    match = getattr(request, "resolver_match", None)
    if match is None or request.method not in ("GET", "HEAD") or response.status_code != 200:
        return None
    if _view_opts_out(match):
        return None
    kwargs = match.kwargs
    if "reference" in kwargs:
        return {"object_type": "case", "case_ref": str(kwargs["reference"]).upper()}
    if "entity_id" in kwargs:
        return {"object_type": "entity", "object_id": kwargs["entity_id"]}
    return None


class AccessLogMiddleware:
    """Collects a request's reads and writes them in one INSERT once the response is closed."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        pending: list[AccessEntry] = []
        token = _pending.set(pending)
        try:
            response = self.get_response(request)
            read = _read_of(request, response)
            if read is not None:
                match = request.resolver_match
                access_record(request.user, via=match.view_name, path=request.path, **read)
        finally:
            _pending.reset(token)
        if pending:
            # Run by response.close(), which the server calls once it has sent the response
            # (and before request_finished closes the database connection).
            response._resource_closers.append(lambda: _write(pending))
        return response
