"""manage.py api_token USERNAME [--name NAME] [--days N]: a new API token, printed once."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.core.management.base import BaseCommand, CommandError

from casework.security.tokens import api_token_create


class Command(BaseCommand):
    help = "Make an API token for a user and print it (it is stored hashed and never shown again)."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--name", default="")
        parser.add_argument("--days", type=int, default=None, help="Days until it expires (0: never).")

    def handle(self, *args, username, name, days, **options):
        user = User.objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"No user named {username!r}.")
        _, secret = api_token_create(actor="system", user=user, name=name, days=days)
        self.stdout.write(secret)
