"""manage.py import_release FILE.json [--as USERNAME]: post a release as CI would.

The file holds one release object, or a list of them (see casework/releases/schemas.py for
the shape). Every release is validated first; any bad field is named and nothing is saved."""

from __future__ import annotations

import json

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from casework.errors import DomainError
from casework.releases.schemas import release_validate


class Command(BaseCommand):
    help = "Import one release (or a list) from a JSON file and queue the detective for each."

    def add_arguments(self, parser):
        parser.add_argument("file")
        parser.add_argument("--as", dest="username", default="", help="The user to record as the submitter.")

    def handle(self, *args, file: str, username: str, **options):
        from casework.releases.services import release_submit

        try:
            with open(file, encoding="utf-8") as fh:
                data = json.load(fh)
        except (OSError, json.JSONDecodeError) as exc:
            raise CommandError(f"{file}: {exc}") from None
        items = data if isinstance(data, list) else [data]
        problems = []
        for n, item in enumerate(items, 1):
            try:
                release_validate(item)
            except ValidationError as exc:
                where = f"release {n}: " if len(items) > 1 else ""
                problems += [f"{where}{field}: {m}" for field, msgs in exc.message_dict.items() for m in msgs]
        if problems:
            raise CommandError("Nothing imported.\n" + "\n".join(problems))
        actor = User.objects.filter(username=username).first() if username else "system"
        if username and actor is None:
            raise CommandError(f"No user {username!r}.")
        try:
            with transaction.atomic():
                releases = [release_submit(actor=actor, data=item, via="import") for item in items]
        except DomainError as exc:
            raise CommandError(f"Nothing imported: {exc.message}") from None
        for release in releases:
            self.stdout.write(f"{release.case.reference} {release.release_id} {release.version}: detective queued")
