"""The access change's decision on a close made outside its page (the queue's bulk close),
registered on its CaseType (casework.cases.types.case_type_register_decide): the
investigator's mutation_decide, which withdraws open requests and records the decision
against the advisory report."""

from __future__ import annotations


def access_decide(*, actor, case, outcome: str, reason: str):
    from casework.access.services.decisions import mutation_decide

    return mutation_decide(actor=actor, mutation=case.record, outcome=outcome, reason=reason)
