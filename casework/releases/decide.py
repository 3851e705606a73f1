"""The release's decision on a close made outside its page (the queue's bulk close), registered
on its CaseType (casework.cases.types.case_type_register_decide): release_decide, with its role
(release managers decide) and its override rule. A decision against the detective's report
needs its own confirmation, which a close from elsewhere never gives: it is refused with the
report's words."""

from __future__ import annotations


def release_decide_case(*, actor, case, outcome: str, reason: str):
    from casework.releases.services import release_decide

    return release_decide(actor=actor, release=case.record, outcome=outcome, reason=reason)
