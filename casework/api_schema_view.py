"""GET /api/schema/: the OpenAPI schema, generated and rendered once per process (issue 44).

The schema is public (drf-spectacular's SERVE_PUBLIC): every signed-in caller gets the same
document, whoever they are, so it depends only on the code that was loaded (the URL
configuration, the case types registered at start-up) and on what was asked: the API version,
the language and the format. Generating it walks every operation (~0.5 s) and rendering it as
YAML costs about as much again, on every request; a test run fetches it dozens of times, and
so does every client that reads it before each session. So the rendered bytes are kept in
this process, keyed by the URL configuration, version, language and media type. Who may read
it (SERVE_PERMISSIONS: signed in) is still checked on every request, before the cache."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpResponse
from django.urls import get_urlconf
from django.utils import translation
from drf_spectacular.utils import extend_schema
from drf_spectacular.views import SCHEMA_KWARGS, SpectacularAPIView
from rest_framework.response import Response

# key -> (body, content type, Content-Disposition)
_rendered: dict[tuple, tuple[bytes, str, str]] = {}


def _key(view: SpectacularAPIView, request) -> tuple:
    version = view.api_version or request.version or view._get_version_parameter(request)
    lang = request.GET.get("lang") if settings.USE_I18N else None
    return (get_urlconf() or settings.ROOT_URLCONF, version, lang or translation.get_language(),
            request.accepted_media_type)


class SchemaView(SpectacularAPIView):
    @extend_schema(**SCHEMA_KWARGS)  # as the parent's: left out of the schema (SERVE_INCLUDE_SCHEMA)
    def get(self, request, *args, **kwargs):
        hit = _rendered.get(_key(self, request))
        if hit is None:
            return super().get(request, *args, **kwargs)
        body, content_type, disposition = hit
        response = HttpResponse(body, content_type=content_type)
        response["Content-Disposition"] = disposition
        return response

    def finalize_response(self, request, response, *args, **kwargs):
        response = super().finalize_response(request, response, *args, **kwargs)
        if isinstance(response, Response) and response.status_code == 200 and request.method == "GET":
            response.render()
            _rendered[_key(self, request)] = (response.content, response["Content-Type"],
                                              response["Content-Disposition"])
        return response
