"""Rate limits for pages outside the API, counted with DRF's throttles and the same rates
(REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]) and cache (CACHE_URL) as the API's."""

from __future__ import annotations

import math
from functools import wraps

from django.shortcuts import render
from rest_framework.throttling import SimpleRateThrottle


class _PageIpThrottle(SimpleRateThrottle):
    def __init__(self, scope: str):
        self.scope = scope
        super().__init__()

    def get_cache_key(self, request, view):
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}


def page_throttle(scope: str):
    """Allow a page `scope`'s rate per client IP; over it, a 429 page with Retry-After. The
    employee's answer page shares "signed_link" with its API endpoint, so guessing tokens
    through the page is no cheaper than through the API."""

    def decorate(view):
        @wraps(view)
        def wrapper(request, *args, **kwargs):
            throttle = _PageIpThrottle(scope)
            if not throttle.allow_request(request, None):
                wait = math.ceil(throttle.wait() or 1)
                response = render(request, "429.html", {"wait": wait}, status=429)
                response["Retry-After"] = str(wait)
                return response
            return view(request, *args, **kwargs)

        return wrapper

    return decorate
