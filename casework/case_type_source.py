"""The registered case types, for the layers below the case core: what a webhook endpoint may
subscribe to (the outbox's Endpoint.case_types) and what a team may own (people.Team.case_types).
The case core owns the case types and sits above both, so it registers where they come from
(CasesConfig.ready)."""

from __future__ import annotations

from collections.abc import Callable

# {key: label}, in the case core's order; none until the case core registers its source.
_source: Callable[[], dict[str, str]] = dict


def case_types_source_register(source: Callable[[], dict[str, str]]) -> None:
    global _source
    _source = source


def case_types_known() -> dict[str, str]:
    return _source()
