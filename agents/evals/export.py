"""From a closed case to a scenario: its input as the API would take it, the reference data
it needs, the person's decision as the expected decision fields, the agents' trajectory as the
tools expected in order; personal data masked (names, emails, customer and account ids, card
holder, devices, and emails / phone numbers / long digit runs inside free text).

Used by `manage.py export_scenario REF` and "Add to evaluation suite" on the case page.
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml
from django.conf import settings

from agents.evals.schema import SUITES_DIR, Scenario, ScenarioFileError, scenario_yaml

# The person's outcome -> what the agents should have concluded.
DECISION_FIELDS = {
    "release_risk": {"go": {"extra.report_severity": ["low", "medium"]},
                     "no_go": {"extra.report_severity": ["high", "medium"]},
                     "deferred": {"extra.report_severity": ["medium", "high"]}},
    "fraud_alert": {"confirmed_fraud": {"orchestrator.risk_level": ["high", "critical"]},
                    "legit": {"orchestrator.risk_level": ["low", "medium"]},
                    "false_positive": {"orchestrator.risk_level": ["low", "medium"]}},
    "access_change": {"accepted": {"extra.report_recommendation": "accept"},
                      "rejected": {"extra.report_recommendation": "reject_investigate"},
                      "manual": {"extra.report_recommendation": "manual_intervention"}},
    "transaction_investigation": {"fraud": {"record.severity": ["HIGH", "CRITICAL"]},
                                  "not_fraud": {"record.severity": ["LOW", "MEDIUM"]}},
    "support_ticket": {"escalated": {"case.priority": ["high", "critical"]}},
}
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(\.[\w-]+)+")
_DIGITS = re.compile(r"\+?\d[\d ().-]{7,}\d")


class ExportRefused(Exception):
    pass


class Masker:
    """Consistent pseudonyms: the same value gets the same mask within one export."""

    def __init__(self):
        self.seen: dict[tuple[str, str], str] = {}

    def __call__(self, kind: str, value) -> str:
        if value in (None, ""):
            return value
        key = (kind, str(value))
        if key not in self.seen:
            number = sum(1 for k in self.seen if k[0] == kind) + 1
            self.seen[key] = {"name": f"Person {number}", "customer": f"CUST-M{number:04d}",
                              "account": f"ACC-M{number:04d}", "card": f"CARD-M{number:04d}",
                              "device": f"device-m{number}", "login": f"manager-m{number}"}[kind]
        return self.seen[key]

    @staticmethod
    def text(value: str) -> str:
        return _DIGITS.sub("[number]", _EMAIL.sub("[email]", value or ""))


def suites_root() -> Path:
    return Path(getattr(settings, "EVALS_SUITES_DIR", "") or SUITES_DIR)


def scenario_data(case) -> dict:
    """The scenario as a dict (before YAML)."""
    from casework.cases.selectors import case_final_decision

    if not case.is_closed:
        raise ExportRefused(f"{case.reference} is not closed: only a decided case becomes a scenario.")
    decision = case_final_decision(case)
    if decision is None:
        raise ExportRefused(f"{case.reference} has no final decision to take as the ground truth.")
    builder = BUILDERS.get(case.case_type)
    if builder is None or case.record is None:
        raise ExportRefused(f"{case.reference}: its case type cannot be exported.")
    mask = Masker()
    input_data, reference, fields = builder(case.record, mask)
    fields = {**fields, **DECISION_FIELDS.get(case.case_type, {}).get(decision.outcome, {})}
    expect = {"fields": fields, "tools_in_order": _trajectory(case),
              "rubric": f"The person decided {decision.outcome!r}: "
                        f"{Masker.text(decision.reason)[:500] or 'no reason given'}."}
    data = {"id": f"{case.reference.lower()}-export", "category": "exported",
            "description": f"Exported from {case.reference} (decided {decision.outcome}); personal data masked.",
            "input": input_data}
    if reference:
        data["reference"] = reference
    data["expect"] = expect
    data["source"] = case.reference
    return data


def scenario_export(case) -> str:
    return scenario_yaml(scenario_data(case))


def scenario_validate_text(text: str, *, label: str) -> Scenario:
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ScenarioFileError(label, "file", f"not valid YAML ({getattr(exc, 'problem', exc)})") from None
    if not isinstance(raw, dict):
        raise ScenarioFileError(label, "file", "a scenario is a mapping")
    from pydantic import ValidationError

    try:
        return Scenario.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise ScenarioFileError(label, ".".join(map(str, first["loc"])) or "file", first["msg"]) from None


def scenario_save(*, case, text: str, actor) -> Path:
    """Validate the (edited) scenario and add it to the case type's suite; audited."""
    from audit.services import audit_record

    scenario = scenario_validate_text(text, label=f"{case.case_type}/{case.reference.lower()}-export.yaml")
    path = suites_root() / case.case_type / f"{scenario.id}.yaml"
    if path.exists():
        raise ScenarioFileError(f"{case.case_type}/{path.name}", "id", f"a scenario {scenario.id!r} already exists")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")
    audit_record(actor=actor, action="evals.scenario_added", case=case,
                 data={"suite": case.case_type, "scenario": scenario.id})
    return path


def _trajectory(case) -> list[str]:
    """The agents and tools the case's runs called, each once, in the order first called
    (a fan-out's order varies between runs: for fraud only the orchestrator after them)."""
    from agents.models import AgentCall

    if case.case_type == "fraud_alert":
        return ["orchestrator"]
    names: list[str] = []
    for name in (AgentCall.objects.filter(run__case=case).exclude(run__mode="close")
                 .order_by("id").values_list("name", flat=True)):
        if name not in names:
            names.append(name)
    return names


# --- per case type: (input, reference, extra expected fields) ---------------------------------

def _release(release, mask):
    data = {"release_id": release.release_id, "version": release.version, "changes": release.changes,
            "tests": {"passed": release.tests_passed, "failed": release.tests_failed, "skipped": release.tests_skipped},
            "deployment_metrics": {"error_rate": release.error_rate, "response_time_p95": release.response_time_p95},
            "test_details": [{"name": t.name, "area": t.area, "status": t.status, "critical": t.critical,
                              "message": Masker.text(t.message)} for t in release.test_details.order_by("id")]}
    return data, {}, {}


def _fraud(alert, mask):
    from agents.pipelines.fraud import alert_input

    data = alert_input(alert)
    data["account_id"] = mask("account", data["account_id"])
    if data.get("one_line_explanation"):
        data["one_line_explanation"] = Masker.text(data["one_line_explanation"])
    return {k: v for k, v in data.items() if v is not None}, {}, {}


def _support(ticket, mask):
    customer = ticket.customer
    first = ticket.messages.filter(direction="customer").order_by("id").first()
    customer_id = mask("customer", customer.customer_id)
    reference = {
        "customers": [{"customer_id": customer_id, "name": mask("name", customer.name), "plan": customer.plan,
                       "tenure_months": customer.tenure_months, "seats": customer.seats, "region": customer.region,
                       "vip": customer.vip}],
        "articles": [{"article_id": a.article_id, "category": a.category, "title": a.title, "body": a.body}
                     for a in _articles()],
    }
    fields = {"record.ticket_type": ticket.ticket_type} if ticket.ticket_type else {}
    return {"customer_id": customer_id, "message": Masker.text(first.text if first else "")}, reference, fields


def _articles():
    from casework.support.models import KBArticle

    return KBArticle.objects.order_by("article_id")[:50]


def _transaction(investigation, mask):
    txn = investigation.transaction
    account = mask("card", txn.account.account_id)

    def row(t):
        return {"transaction_id": t.transaction_id, "account_id": account, "card_last4": "0000",
                "amount": str(t.amount), "currency": t.currency, "merchant": t.merchant, "mcc": t.mcc,
                "country": t.country, "channel": t.channel, "device_id": mask("device", t.device_id) if t.device_id else "",
                "occurred_at": t.occurred_at.isoformat(), "home_country": txn.account.home_country,
                "holder_name": "Holder masked", "is_fraud": t.is_fraud}

    history = txn.account.transactions.exclude(pk=txn.pk).order_by("occurred_at", "id")[:500]
    return ({"rows": [row(txn)], "transaction_id": txn.transaction_id, "account": account},
            {"rows": [row(t) for t in history]}, {})


def _access(mutation, mask):
    from agents.evals.export_access import access_scenario_parts

    return access_scenario_parts(mutation, mask)


BUILDERS = {"release_risk": _release, "fraud_alert": _fraud, "support_ticket": _support,
            "transaction_investigation": _transaction, "access_change": _access}
