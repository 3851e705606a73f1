"""The case types an endpoint may subscribe to (Endpoint.case_types): the admin's and the API's
choices, and what a subscription is checked against. The source is the platform's
(casework.case_types_known), registered by the case core; the outbox's modules name it here."""

from __future__ import annotations

from casework.case_types_known import case_types_known, case_types_source_register

__all__ = ["case_types_known", "case_types_source_register"]
