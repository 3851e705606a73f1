"""One exception handler turns domain errors into clear JSON 4xx responses."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404, JsonResponse
from django.views import defaults
from rest_framework import exceptions, status
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


def not_found(request, exception=None):
    """handler404: a URL under /api/ that matches no route (`/api/cases/x/y/`, an id that is not
    a number) answers JSON like every other API error, not the HTML page."""
    if request.path_info.startswith("/api/"):
        return JsonResponse({"detail": "Not found.", "code": "not_found"}, status=404)
    return defaults.page_not_found(request, exception)
