"""Pages whose count stays cheap as the table grows, for the queue page and every API list.

Counting 100,000 rows on each request costs a scan; counting at most COUNT_CAP + 1 rows
(`SELECT COUNT(*) FROM (... LIMIT 10001)`) costs the same at any size. Past the cap the
page says "10,000+" and the API says `count_capped: true`; narrowing the filters gives the
exact figure again."""

from __future__ import annotations

from django.core.paginator import Paginator
from django.db.models import QuerySet
from django.utils.functional import cached_property
from rest_framework.pagination import PageNumberPagination
from rest_framework.response import Response

COUNT_CAP = 10_000
API_PAGE_SIZE = 25
API_MAX_PAGE_SIZE = 100


class CappedPaginator(Paginator):
    @cached_property
    def count(self) -> int:
        if isinstance(self.object_list, QuerySet):
            return self.object_list[: COUNT_CAP + 1].count()
        return len(self.object_list)

    @property
    def count_capped(self) -> bool:
        return self.count > COUNT_CAP


class ApiPagination(PageNumberPagination):
    page_size = API_PAGE_SIZE
    page_size_query_param = "page_size"
    page_size_query_description = f"Results per page, {API_PAGE_SIZE} by default and at most {API_MAX_PAGE_SIZE}."
    max_page_size = API_MAX_PAGE_SIZE
    django_paginator_class = CappedPaginator

    def get_paginated_response(self, data):
        paginator = self.page.paginator
        return Response({
            "count": min(paginator.count, COUNT_CAP) if paginator.count_capped else paginator.count,
            "count_capped": paginator.count_capped,
            "next": self.get_next_link(),
            "previous": self.get_previous_link(),
            "results": data,
        })

    def get_paginated_response_schema(self, schema):
        body = super().get_paginated_response_schema(schema)
        body["properties"]["count"]["description"] = f"Matching rows, counted up to {COUNT_CAP:,}."
        body["properties"]["count_capped"] = {
            "type": "boolean", "description": f"True when more than {COUNT_CAP:,} rows match."}
        body["required"] = [*body.get("required", []), "count_capped"]
        return body
