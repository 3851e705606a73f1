"""Record the entities of cases made before extraction existed (or while it was off).

Idempotent: a second run adds nothing. Batched: one transaction per batch of cases, in id
order, so a large history is walked without one long transaction, and a run stopped midway
resumes with --after <last id printed>.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand
from django.db import transaction

from casework.cases.models import Case, Decision
from casework.cases.types import CASE_TYPES
from casework.entities.extraction import entities_extract
from casework.entities.services import entities_confirm_fraud


class Command(BaseCommand):
    help = "Extract the entities every existing case names, and flag those a fraud decision confirmed."

    def add_arguments(self, parser):
        parser.add_argument("--batch", type=int, default=500, help="Cases per transaction (default 500).")
        parser.add_argument("--after", type=int, default=0, help="Start after this case id (resume).")

    def handle(self, *args, batch: int, after: int, **options):
        if batch < 1:
            self.stderr.write("--batch must be at least 1.")
            return
        types = [key for key, ct in CASE_TYPES.items() if ct.entities is not None]
        last, cases, named = after, 0, 0
        while True:
            ids = list(Case.objects.filter(pk__gt=last, case_type__in=types).order_by("pk")
                       .values_list("pk", flat=True)[:batch])
            if not ids:
                break
            with transaction.atomic():
                for case in Case.objects.filter(pk__in=ids).order_by("pk"):
                    named += entities_extract(case=case)
            cases += len(ids)
            last = ids[-1]
            self.stdout.write(f"{cases} cases, {named} mentions named (up to case id {last})")
        flagged = 0
        for key in types:
            outcomes = CASE_TYPES[key].entities.fraud_outcomes
            if not outcomes:
                continue
            decisions = (Decision.objects.filter(final=True, outcome__in=outcomes, case__case_type=key)
                         .select_related("case").order_by("decided_at"))
            for decision in decisions.iterator(chunk_size=batch):
                flagged += entities_confirm_fraud(case=decision.case, decided_at=decision.decided_at)
        self.stdout.write(self.style.SUCCESS(f"Done: {cases} cases, {named} mentions named, "
                                             f"{flagged} entities newly flagged as confirmed fraud."))
