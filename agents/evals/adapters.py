"""Per case type: how a scenario's reference data and input become a case, through the same
services the API calls. Each case type registers its `submit(input, reference)` on its
CaseType (casework.cases.types.Evaluation, from the type's AppConfig.ready); it creates the
case (or nothing synchronously, e.g. a support message whose ticket the intake run opens) and
never starts a run itself: runs are queued on commit and the runner drives them.
"""

from __future__ import annotations


def evaluation_of(case_type: str):
    """The case type's registered Evaluation, or None (an unknown type, or one without)."""
    from casework.cases.types import CASE_TYPES

    found = CASE_TYPES.get(case_type)
    return found.evaluation if found is not None else None


def submit(case_type: str, scenario) -> None:
    evaluation = evaluation_of(case_type)
    if evaluation is None:
        raise LookupError(f"The case type {case_type!r} registered no evaluation adapter.")
    evaluation.submit(scenario.input, scenario.reference)
