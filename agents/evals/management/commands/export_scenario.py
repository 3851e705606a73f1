"""manage.py export_scenario REF [--save] : a closed case as an evaluation scenario (YAML).

Prints the scenario (the person's decision as the expectation, personal data masked), to edit
and add to its case type's suite folder (casework/<type>/scenarios/, the type's
Evaluation.suite_dir); --save writes it there at once."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from agents.evals.export import ExportRefused, scenario_export, scenario_save
from agents.evals.schema import ScenarioFileError


class Command(BaseCommand):
    help = "Export a closed case as an evaluation scenario (personal data masked)."

    def add_arguments(self, parser):
        parser.add_argument("reference", help="The case's reference, e.g. REL-000012.")
        parser.add_argument("--save", action="store_true", help="Add it to its case type's suite.")

    def handle(self, *args, reference: str, save: bool, **options):
        from casework.cases.models import Case

        case = Case.objects.filter(reference=reference.upper()).first()
        if case is None:
            raise CommandError(f"No case {reference!r}.")
        try:
            text = scenario_export(case)
            if save:
                path = scenario_save(case=case, text=text, actor="manage.py export_scenario")
                self.stdout.write(f"Saved {path}")
                return
        except (ExportRefused, ScenarioFileError) as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(text)
