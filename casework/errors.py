"""Domain errors every layer understands. Field errors use Django's ValidationError."""

from __future__ import annotations

from django.core.exceptions import NON_FIELD_ERRORS, ValidationError


class DomainError(Exception):
    """An action the domain refuses; its message is shown to the person as it is."""

    status_code = 400

    def __init__(self, message: str, *, code: str = "refused"):
        super().__init__(message)
        self.message = message
        self.code = code


class Conflict(DomainError):
    """The action collides with one that already happened (a second close, a stale state)."""

    status_code = 409


def error_lines(errors, *, named: bool = True) -> list[str]:
    """Each problem as "field: message" ("message" alone when it is about the whole form, or
    with named=False where the form has one field the page already shows), from a
    ValidationError, a form's `errors`, a DomainError, or any other exception."""
    if isinstance(errors, DomainError):
        return [errors.message]
    if isinstance(errors, ValidationError):
        if not hasattr(errors, "error_dict"):
            return list(errors.messages)
        items = errors.message_dict.items()
    elif isinstance(errors, Exception):
        return [str(errors) or type(errors).__name__]
    else:
        items = errors.items()
    return [m if field in (NON_FIELD_ERRORS, None) or not named else f"{field}: {m}"
            for field, msgs in items for m in msgs]


def error_text(errors, *, named: bool = True) -> str:
    """error_lines, joined for one message."""
    return "; ".join(error_lines(errors, named=named))
