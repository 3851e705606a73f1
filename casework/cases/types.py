"""The five case types: reference prefix, outcomes a decision may take, and the tabs a
case-type package adds to the case page (registered from its AppConfig.ready)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Tab:
    id: str
    label: str
    template: str


@dataclass
class CaseType:
    key: str
    label: str
    prefix: str
    outcomes: tuple[tuple[str, str], ...]
    tabs: list[Tab] = field(default_factory=list)
    # Name of the reverse one-to-one from Case to this type's record (e.g. "fraud_alert").
    record_attr: str = ""
    # Partials that replace the case page's plain overview and decision box when the case
    # has its record (set from the case-type package's AppConfig.ready); "" keeps the plain ones.
    overview_template: str = ""
    decision_template: str = ""

    def outcome_label(self, outcome: str) -> str:
        return dict(self.outcomes).get(outcome, outcome)


CASE_TYPES: dict[str, CaseType] = {
    ct.key: ct
    for ct in [
        CaseType(
            "fraud_alert", "Fraud alert", "FRA",
            (("confirmed_fraud", "Confirmed fraud"), ("legit", "Marked legit"),
             ("false_positive", "Dismissed as false positive")),
        ),
        CaseType(
            "support_ticket", "Support ticket", "SUP",
            (("replied", "Replied"), ("escalated", "Escalated"), ("no_action", "No action needed")),
        ),
        CaseType(
            "access_change", "Access change", "ACC",
            (("accepted", "Change accepted"), ("rejected", "Change rejected"),
             ("manual", "Handled manually")),
        ),
        CaseType(
            "transaction_investigation", "Transaction investigation", "TXN",
            (("fraud", "Fraud"), ("not_fraud", "Not fraud"), ("inconclusive", "Inconclusive")),
        ),
        CaseType(
            "release_risk", "Release risk", "REL",
            (("go", "Release approved"), ("no_go", "Release blocked"), ("deferred", "Deferred")),
        ),
    ]
}

CASE_TYPE_CHOICES = [(ct.key, ct.label) for ct in CASE_TYPES.values()]


def case_type_register_tab(case_type: str, tab: Tab) -> None:
    tabs = CASE_TYPES[case_type].tabs
    if all(t.id != tab.id for t in tabs):
        tabs.append(tab)
