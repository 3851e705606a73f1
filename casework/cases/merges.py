"""A case merged into another: the entities app owns merges (casework/entities: CaseMerge,
case_merge), a layer above the case core, yet the case's timeline reads the history merged
into it and its page sends a merged duplicate on to the case that took it. So the entities app
registers its two reads here (case_merges_register, from its AppConfig.ready), and the case
core names none of it. Until it does, no case was merged."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def _none_merged(case_id: int) -> list[int]:
    return []


def _not_merged(case) -> Any | None:
    return None


_merged_ids: Callable[[int], list[int]] = _none_merged
_merged_into: Callable[[Any], Any | None] = _not_merged


def case_merges_register(*, merged_ids: Callable[[int], list[int]], merged_into: Callable[[Any], Any | None]) -> None:
    """merged_ids(case_id): the cases merged into this one; merged_into(case): the merge that
    took this case (with survivor, merged_by, merged_at and reason), or None."""
    global _merged_ids, _merged_into
    _merged_ids, _merged_into = merged_ids, merged_into


def case_merged_ids(case_id: int) -> list[int]:
    return _merged_ids(case_id)


def case_merged_into(case) -> Any | None:
    return _merged_into(case)
