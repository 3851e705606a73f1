"""The case types the platform below the case core may name: a team's case types
(casework.people.teams), what a webhook endpoint may subscribe to (casework.outbox). The case
core owns the case types and sits in a layer above both, so it registers where they come from
(CasesConfig.ready); these layers ask at use."""

from __future__ import annotations

from collections.abc import Callable

# {key: label}, in the case core's order; none until the case core registers its source.
_source: Callable[[], dict[str, str]] = dict


def case_types_source_register(source: Callable[[], dict[str, str]]) -> None:
    global _source
    _source = source


def case_types_known() -> dict[str, str]:
    return _source()
