"""Pages whose count stays cheap as the table grows, for the queue page and every API list.

Counting 100,000 rows on each request costs a scan; counting at most COUNT_CAP + 1 rows
(`SELECT COUNT(*) FROM (... LIMIT 10001)`) costs the same at any size. Past the cap the
page says "10,000+" and the API says `count_capped: true`; narrowing the filters gives the
exact figure again.

A text search (`?q=`) is counted up to SEARCH_COUNT_CAP (1,000) instead: its count walks the
cases newest first until it has found the cap's worth of matches, so it reads cap / (the share of
cases that match) rows. For a common phrase (3% of titles) at 1,000,000 cases that was 330,000
rows and a 493 ms page p95 at 10,000; at 1,000 it is a tenth of that (bench/queue_100k.py)."""

from __future__ import annotations

from functools import partial

from django.core.paginator import Paginator
from django.db.models import QuerySet
from django.utils.functional import cached_property
from rest_framework.pagination import PageNumberPagination
from rest_framework.response import Response

COUNT_CAP = 10_000
SEARCH_COUNT_CAP = 1_000
API_PAGE_SIZE = 25
API_MAX_PAGE_SIZE = 100


def count_cap_for(params) -> int:
    """The count's cap for a request's query parameters: lower for a text search (above)."""
    return SEARCH_COUNT_CAP if (params.get("q") or "").strip() else COUNT_CAP


class CappedPaginator(Paginator):
    def __init__(self, *args, cap: int | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.cap = COUNT_CAP if cap is None else cap

    @cached_property
    def count(self) -> int:
        if isinstance(self.object_list, QuerySet):
            return self.object_list[: self.cap + 1].count()
        return len(self.object_list)

    @property
    def count_capped(self) -> bool:
        return self.count > self.cap


class ApiPagination(PageNumberPagination):
    page_size = API_PAGE_SIZE
    page_size_query_param = "page_size"
    page_size_query_description = f"Results per page, {API_PAGE_SIZE} by default and at most {API_MAX_PAGE_SIZE}."
    max_page_size = API_MAX_PAGE_SIZE
    django_paginator_class = CappedPaginator

    def paginate_queryset(self, queryset, request, view=None):
        self.django_paginator_class = partial(CappedPaginator, cap=count_cap_for(request.query_params))
        return super().paginate_queryset(queryset, request, view)

    def get_paginated_response(self, data):
        paginator = self.page.paginator
        return Response({
            "count": min(paginator.count, paginator.cap) if paginator.count_capped else paginator.count,
            "count_capped": paginator.count_capped,
            "next": self.get_next_link(),
            "previous": self.get_previous_link(),
            "results": data,
        })

    def get_paginated_response_schema(self, schema):
        body = super().get_paginated_response_schema(schema)
        body["properties"]["count"]["description"] = (
            f"Matching rows, counted up to {COUNT_CAP:,} ({SEARCH_COUNT_CAP:,} with a text search, q).")
        body["properties"]["count_capped"] = {
            "type": "boolean", "description": "True when more rows match than were counted."}
        body["required"] = [*body.get("required", []), "count_capped"]
        return body
