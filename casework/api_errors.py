"""One exception handler turns domain errors into clear JSON 4xx responses, and one parser
refuses a JSON body of the wrong shape before any view reads it."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404, JsonResponse
from django.views import defaults
from rest_framework import exceptions, status
from rest_framework.parsers import JSONParser
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from casework.errors import DomainError


def exception_handler(exc, context):
    if isinstance(exc, DomainError):
        return Response({"detail": exc.message, "code": exc.code}, status=exc.status_code)
    if isinstance(exc, DjangoValidationError):
        if hasattr(exc, "error_dict"):
            body = {
                ("non_field_errors" if field == "__all__" else field): [str(m) for m in msgs]
                for field, msgs in exc.message_dict.items()
            }
        else:
            body = {"non_field_errors": exc.messages}
        return Response(body, status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, PermissionDenied):
        exc = exceptions.PermissionDenied(str(exc) or None)
    if isinstance(exc, Http404):
        exc = exceptions.NotFound(str(exc) or None)
    return drf_exception_handler(exc, context)


class JSONObjectParser(JSONParser):
    """JSON whose top level is an object, as every write operation documents (except the fraud
    alerts' batch, which keeps DRF's JSONParser and checks the shape itself). An array, a null,
    a string or a number is refused here with a 400 naming what came, so that no view meets
    `request.data.get` on a list (a 500 schemathesis found on PUT /api/transactions/rates/).
    The project's default parser (REST_FRAMEWORK["DEFAULT_PARSER_CLASSES"])."""

    def parse(self, stream, media_type=None, parser_context=None):
        data = super().parse(stream, media_type, parser_context)
        if not isinstance(data, dict):
            raise exceptions.ParseError(f"The body must be a JSON object ({{\"field\": value, ...}}), "
                                        f"not {_json_kind(data)}.", code="not_an_object")
        return data


def _json_kind(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    return "a string"


def not_found(request, exception=None):
    """handler404: a URL under /api/ that matches no route (`/api/cases/x/y/`, an id that is not
    a number) answers JSON like every other API error, not the HTML page."""
    if request.path_info.startswith("/api/"):
        return JsonResponse({"detail": "Not found.", "code": "not_found"}, status=404)
    return defaults.page_not_found(request, exception)
