from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from casework.access.data_io import COLUMNS, ImportFailed, access_data_import


class Command(BaseCommand):
    help = (f"Import access reference data and HR mutations from the CSV files in DIR ({', '.join(COLUMNS)}); "
            "see docs/access_data.md. All or nothing: one bad row and nothing is imported. Pending mutations "
            "are investigated once the import has committed.")

    def add_arguments(self, parser):
        parser.add_argument("directory")
        parser.add_argument("--no-investigate", action="store_true",
                            help="Store Pending mutations without starting their investigation.")

    def handle(self, *args, **options):
        try:
            result = access_data_import(options["directory"], investigate=not options["no_investigate"])
        except ImportFailed as exc:
            lines = [str(p) for p in exc.problems]
            shown = "\n".join(f"  {line}" for line in lines[:50])
            more = f"\n  ... and {len(lines) - 50} more" if len(lines) > 50 else ""
            raise CommandError(f"Nothing was imported: {len(lines)} problem(s).\n{shown}{more}") from exc
        for name in COLUMNS:
            parts = [f"{bucket} {getattr(result, bucket).get(name, 0)}" for bucket in ("created", "updated", "unchanged")
                     if getattr(result, bucket).get(name)]
            if parts:
                self.stdout.write(f"{name}: {', '.join(parts)}")
        for name in result.skipped_files:
            self.stdout.write(f"{name}: skipped (written by export only; the audit trail is never imported)")
        self.stdout.write(self.style.SUCCESS(f"Imported. {result.investigated} investigation(s) started."))
