"""Domain errors every layer understands. Field errors use Django's ValidationError."""

from __future__ import annotations


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
