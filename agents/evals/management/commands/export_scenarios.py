"""manage.py export_scenarios DIR: every approved scenario stored in the database (added from
the web, reviewed by a second person) as DIR/<suite>/<id>.yaml, for version control; point DIR
at agents/evals/suites in a checkout and commit them."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand

from agents.evals.stored import stored_scenarios_export


class Command(BaseCommand):
    help = "Write the approved stored scenarios to DIR/<suite>/<id>.yaml."

    def add_arguments(self, parser):
        parser.add_argument("directory", type=Path)

    def handle(self, *args, directory: Path, **options):
        written = stored_scenarios_export(directory)
        for path in written:
            self.stdout.write(str(path))
        self.stdout.write(f"{len(written)} scenario(s) written.")
