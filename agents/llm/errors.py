"""Provider errors, normalised. Every provider maps its SDK's exceptions onto these."""

from __future__ import annotations


class LLMError(Exception):
    retryable = False
    kind = "provider"

    def __init__(self, message: str, *, status_code: int | None = None, retry_after: float | None = None):
        super().__init__(message)
        self.message = message
        self.status_code = status_code
        self.retry_after = retry_after


class AuthenticationError(LLMError):
    kind = "authentication"


class ValidationError(LLMError):
    """The request (or the model's answer) does not fit what the other side expects."""

    kind = "validation"


class RateLimitError(LLMError):
    retryable = True
    kind = "rate_limit"


class NetworkError(LLMError):
    retryable = True
    kind = "network"


class TimeoutError(LLMError):  # noqa: A001 - the normalised name the design asks for
    retryable = True
    kind = "timeout"


class StreamInterrupted(LLMError):
    """A streamed answer broke off after part of it had arrived (and been shown): not retried,
    since a second answer would not continue the first; the part that arrived is kept."""

    kind = "stream_interrupted"


class ProviderError(LLMError):
    """Anything else from the provider. 5xx answers are retryable, the rest are not."""

    kind = "provider"

    def __init__(self, message: str, *, status_code: int | None = None, retry_after: float | None = None):
        super().__init__(message, status_code=status_code, retry_after=retry_after)
        self.retryable = status_code is not None and status_code >= 500


def user_message(error: LLMError) -> str:
    """What a person reads on the case page."""
    if isinstance(error, RateLimitError):
        return "Rate limit reached. Please try again in a minute."
    if isinstance(error, AuthenticationError):
        return f"The LLM provider refused the credentials: {error.message}"
    if isinstance(error, TimeoutError):
        return f"The LLM did not answer in time: {error.message}"
    if isinstance(error, NetworkError):
        return f"The LLM endpoint could not be reached: {error.message}"
    return error.message


class BudgetReached(LLMError):
    """The call was refused before it was sent: its estimate would take its case past the
    case's budget (casework/budgets). Not retried: only a lead raising the budget lets it go on.
    A pipeline run then waits in "Budget reached" (a RunPause of kind budget: agents.runtime.pause)."""

    kind = "budget_reached"
