"""What a fraud alert adds to the evaluation harness (agents.evals), registered on its CaseType
(casework.cases.types.case_type_register_evaluation): a scenario's earlier alerts (the
similarity context) and then its alert are created as the API creates them; a decided case
becomes a scenario (the alert as the pipeline reads it, the account masked); only the
orchestrator's place in the trajectory is stable (the specialists fan out in any order)."""

from __future__ import annotations

from pathlib import Path

from django.db import transaction

from casework.cases.types import Evaluation, Grounding

ACTOR = "evaluation"

# The person's outcome -> what the orchestrator should have concluded.
DECISION_FIELDS = {"confirmed_fraud": {"orchestrator.risk_level": ["high", "critical"]},
                   "legit": {"orchestrator.risk_level": ["low", "medium"]},
                   "false_positive": {"orchestrator.risk_level": ["low", "medium"]}}


def submit_fraud(data: dict, reference: dict) -> None:
    from casework.fraud.services import alert_create

    # Earlier alerts of other accounts (similarity context), then the alert under test.
    for earlier in reference.get("alerts", []):
        with transaction.atomic():
            alert_create(actor=ACTOR, data=earlier, via="evaluation")
        _drain()
    with transaction.atomic():
        alert_create(actor=ACTOR, data=data, via="evaluation")


def fraud_scenario_parts(alert, mask):
    from casework.fraud.agents.pipeline import alert_input

    data = alert_input(alert)
    data["account_id"] = mask("account", data["account_id"])
    if data.get("one_line_explanation"):
        data["one_line_explanation"] = mask.text(data["one_line_explanation"])
    return {k: v for k, v in data.items() if v is not None}, {}, {}


def fraud_trajectory(case) -> list[str]:
    return ["orchestrator"]


def _drain() -> None:
    from agents.evals.runner import drain_runs

    drain_runs()


def fraud_statements(case) -> list[str]:
    """What the specialists and the orchestrator state: explanations, indicators, drivers."""
    from agents.evals.grounding import outputs_of, texts_in

    return texts_in(outputs_of(case), ("explanation", "short_explanation", "investigation_summary", "indicators",
                                       "key_drivers"))


def _grounding() -> Grounding:
    from agents.evals.grounding import AMOUNT

    # Account ids and amounts; the analysts' own scores are computed, not quoted, so a bare
    # number is not checked here.
    return Grounding(statements=fraud_statements, items={"account id": r"\b(?:ACC|CUST|CARD)-[A-Z0-9-]*\d",
                                                         "amount": AMOUNT})


EVALUATION = Evaluation(submit=submit_fraud, export=fraud_scenario_parts, decision_fields=DECISION_FIELDS,
                        trajectory=fraud_trajectory, grounding=_grounding(),
                        suite_dir=Path(__file__).resolve().parent / "scenarios",
                        setting_prefixes=("FRAUD",))
