"""`manage.py create_user NAME --role investigator|manager|admin|release_manager [--email ADDRESS]`: a login in
one role, without the admin site (the access import's Username column can then name it).

The password is generated and printed once unless --password is given; the user changes it
after signing in.
"""

from __future__ import annotations

import secrets

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from casework.people.roles import ROLES
from casework.people.services import user_create


class Command(BaseCommand):
    help = "Create a user with a role (investigator, manager, admin or release_manager)."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--role", required=True, choices=ROLES)
        parser.add_argument("--email", default="")
        parser.add_argument("--first-name", default="")
        parser.add_argument("--last-name", default="")
        parser.add_argument("--password", default="", help="Default: a generated one, printed once.")

    def handle(self, *args, username: str, role: str, email: str, first_name: str, last_name: str,
               password: str, **options):
        if User.objects.filter(username=username).exists():
            raise CommandError(f"A user named {username!r} already exists.")
        generated = not password
        password = password or secrets.token_urlsafe(12)
        try:
            with transaction.atomic():
                user = user_create(actor="system", username=username, password=password, role=role,
                                   first_name=first_name, last_name=last_name, email=email)
        except ValidationError as exc:
            raise CommandError("; ".join(f"{field}: {' '.join(msgs)}" for field, msgs in exc.message_dict.items()))
        self.stdout.write(f"Created {user.get_username()} ({role}){f' <{email}>' if email else ''}.")
        if generated:
            self.stdout.write(f"Password (shown once): {password}")
