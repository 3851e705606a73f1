from __future__ import annotations

from django.contrib.auth.models import User
from django.core.management.base import BaseCommand, CommandError

from casework.access.data_io import access_data_export


class Command(BaseCommand):
    help = "Export access reference data, HR mutations, their status history and requests as CSV files into DIR."

    def add_arguments(self, parser):
        parser.add_argument("directory")
        parser.add_argument("--as", dest="username", default=None,
                            help="Export for this person: absences (special-category) are withheld unless "
                                 "they are in a team owning access changes. Without it: everything.")

    def handle(self, *args, **options):
        viewer = None
        if options["username"]:
            viewer = User.objects.filter(username=options["username"], is_active=True).first()
            if viewer is None:
                raise CommandError(f"--as: no active user named {options['username']!r}.")
        counts = access_data_export(options["directory"], viewer=viewer)
        for name, count in counts.items():
            self.stdout.write(f"{name}: {count} row(s)")
        self.stdout.write(self.style.SUCCESS(f"Exported to {options['directory']}."))
