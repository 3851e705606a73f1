"""The case types an endpoint may subscribe to (Endpoint.case_types): the admin's and the API's
choices, and what a subscription is checked against. The case core owns the case types and
sits in a layer above the outbox, so it registers where they come from (CasesConfig.ready)."""

from __future__ import annotations

from collections.abc import Callable

# {key: label}, in the case core's order; none until the case core registers its source.
_source: Callable[[], dict[str, str]] = dict


def case_types_source_register(source: Callable[[], dict[str, str]]) -> None:
    global _source
    _source = source


def case_types_known() -> dict[str, str]:
    return _source()
