"""Headers Django's SecurityMiddleware does not set, and requests refused before any view."""

from __future__ import annotations

import json
from urllib.parse import parse_qsl

from django.conf import settings
from django.http import JsonResponse
from django.shortcuts import render


class PermissionsPolicyMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        response.headers.setdefault("Permissions-Policy", settings.PERMISSIONS_POLICY)
        return response


def _bad_text(value) -> str | None:
    """Why a parsed JSON value cannot be stored as text, or None: PostgreSQL refuses NUL
    characters, and a lone UTF-16 surrogate (JSON allows "\\ud800") cannot be encoded."""
    if isinstance(value, str):
        if "\x00" in value:
            return "a string contains a NUL character (\\u0000)"
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return "a string contains an unpaired surrogate (\\ud800-\\udfff)"
        return None
    if isinstance(value, dict):
        return next(filter(None, (_bad_text(k) or _bad_text(v) for k, v in value.items())), None)
    if isinstance(value, list):
        return next(filter(None, (_bad_text(v) for v in value)), None)
    return None


class ApiJsonTextMiddleware:
    """A JSON body sent to the API whose strings no database column can hold is a 400 before
    any view sees it (found by schemathesis: the fraud intake answered 500 on PostgreSQL).
    Malformed JSON is left to the view's parser, which answers its own 400."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if (request.path_info.startswith("/api/") and request.method in ("POST", "PUT", "PATCH")
                and request.content_type == "application/json"):
            try:
                data = json.loads(request.body or b"null")
            except ValueError:
                data = None
            problem = _bad_text(data)
            if problem:
                return JsonResponse({"detail": f"JSON parse error: {problem}.", "code": "parse_error"}, status=400)
        return self.get_response(request)


class QueryStringLimitMiddleware:
    """A query string past QUERY_STRING_MAX_BYTES is a 400 naming its longest parameter.

    gunicorn runs with `--limit-request-line 0` (bin/run, README), so a long query reaches
    Django instead of ending in gunicorn's bare 414; gunicorn still refuses a request line
    over 1 MiB. Shorter over-long values are the filters' business (`q` past its maximum
    length is a 400 naming `q`)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        query = request.META.get("QUERY_STRING", "")
        limit = settings.QUERY_STRING_MAX_BYTES
        if len(query) <= limit:
            return self.get_response(request)
        pairs = parse_qsl(query, keep_blank_values=True)
        name, value = max(pairs, key=lambda kv: len(kv[0]) + len(kv[1]), default=("", ""))
        name = name[:40] or "query string"
        message = (f"{name}: too long ({len(value):,} characters); a query string may be at most "
                   f"{limit:,} bytes.")
        if request.path_info.startswith("/api/"):
            return JsonResponse({name: [message], "detail": message, "code": "query_too_long"}, status=400)
        return render(request, "400.html", {"message": message}, status=400)
