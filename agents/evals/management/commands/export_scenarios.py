"""manage.py export_scenarios [DIR]: every approved scenario stored in the database (added
from the web, reviewed by a second person) as a scenario file, for version control: into each
case type's own suite folder (its Evaluation.suite_dir, casework/<type>/scenarios/ in a
checkout, to commit), or as DIR/<suite>/<id>.yaml when DIR is given."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from agents.evals.schema import ScenarioFileError
from agents.evals.stored import stored_scenarios_export


class Command(BaseCommand):
    help = "Write the approved stored scenarios to their types' suite folders, or to DIR/<suite>/<id>.yaml."

    def add_arguments(self, parser):
        parser.add_argument("directory", type=Path, nargs="?", default=None,
                            help="Write to DIR/<suite>/ instead of each type's own suite folder.")

    def handle(self, *args, directory: Path | None, **options):
        try:
            written = stored_scenarios_export(directory)
        except ScenarioFileError as exc:
            raise CommandError(str(exc)) from None
        for path in written:
            self.stdout.write(str(path))
        self.stdout.write(f"{len(written)} scenario(s) written.")
