"""What a claim adds to the evaluation harness (agents.evals): a scenario is submitted through the
type's service; its scenario files are in scenarios/ here (Evaluation.suite_dir)."""

from __future__ import annotations

from pathlib import Path

from django.db import transaction

from casework.cases.types import Evaluation


def submit_claim(data: dict, reference: dict) -> None:
    from tests.sixth_type.services import warranty_claim_submit

    with transaction.atomic():
        warranty_claim_submit(actor="evaluation", **data)


EVALUATION = Evaluation(submit=submit_claim,
                        decision_fields={"repair": {"warranty_assessor.verdict": "covered"},
                                         "refuse": {"warranty_assessor.verdict": "not_covered"}},
                        suite_dir=Path(__file__).resolve().parent / "scenarios")
