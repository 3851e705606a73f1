"""The last line of need-to-know: a case reference the person may not see, left in a page or an
API answer by something that quotes other cases (an agent's prose, a run's look-alikes, an
audit entry's data such as a link's "→ FRA-000001"), is replaced before the response leaves.

The selectors and object checks (casework/cases/visibility.py) decide what is shown; this
catches what they cannot see, free text. A reference of a type the person's teams do not own is
looked up (one query, only when the page holds one: they may be named on a restricted case of
that type, or addressed about one: a manager asked to validate an access change); one of a
type they see stands (a restricted case of that type is kept out of lists
and pages by the rule itself). Text responses only (HTML, JSON, plain text, CSV); not streamed
ones (their producers filter rows through the rule); nothing for admins, who see every case.
"""

from __future__ import annotations

import logging
import re
from functools import lru_cache

from django.db import DatabaseError
from django.http import HttpResponse

from casework.cases.types import CASE_TYPES
from casework.cases.visibility import references_addressed, references_visible, sees_every_case, user_case_types

logger = logging.getLogger(__name__)

HIDDEN = "(a case outside your teams)"
TEXT_TYPES = ("text/html", "application/json", "text/plain", "text/csv")


@lru_cache(maxsize=8)
def _pattern(prefixes: tuple[str, ...]) -> re.Pattern:
    alternatives = "|".join(re.escape(p) for p in prefixes)
    return re.compile(rf"\b(?:{alternatives})-\d{{6}}\b", re.IGNORECASE)


def _prefix_types() -> dict[str, str]:
    return {t.prefix.upper(): key for key, t in CASE_TYPES.items()}


def redact_hidden_references(user, text: str) -> str:
    """`text` with every reference of a case this person may not see replaced by HIDDEN."""
    if sees_every_case(user) or not text:
        return text
    prefix_types = _prefix_types()
    pattern = _pattern(tuple(sorted(prefix_types)))
    found = {m.upper() for m in pattern.findall(text)}
    seen_types = user_case_types(user)
    suspects = {ref for ref in found if prefix_types.get(ref.split("-")[0]) not in seen_types}
    if not suspects:
        return text
    hidden = suspects - references_visible(user, suspects) - references_addressed(user, suspects)
    if not hidden:
        return text
    return pattern.sub(
        lambda m: HIDDEN if m.group(0).upper() in hidden else m.group(0), text)


class ReferenceRedactionMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        user = getattr(request, "user", None)
        if (user is None or response.status_code >= 500 or response.streaming
                or not response.get("Content-Type", "").startswith(TEXT_TYPES)):
            return response  # an error page names no case
        try:
            return self._redacted(user, response)
        except DatabaseError:
            # The database went away after the view ran: what the page may show cannot be
            # checked, so it is not shown (the transient-error middleware's answer).
            logger.warning("%s %s: need-to-know check failed on a database error; answered 503.",
                           request.method, request.path, exc_info=True)
            unavailable = HttpResponse("The service is briefly unavailable. Try again in a moment.",
                                       status=503, content_type="text/plain")
            unavailable["Retry-After"] = "1"
            return unavailable

    def _redacted(self, user, response):
        if not user.is_authenticated:
            return response
        charset = response.charset or "utf-8"
        try:
            text = response.content.decode(charset)
        except UnicodeDecodeError:
            return response
        redacted = redact_hidden_references(user, text)
        if redacted is not text and redacted != text:
            response.content = redacted.encode(charset)
            if response.has_header("Content-Length"):
                response["Content-Length"] = str(len(response.content))
        return response
