from __future__ import annotations

from django.core.management.base import BaseCommand

from casework.cases.demo import demo_load
from casework.cases.teams_selectors import person_access_line


class Command(BaseCommand):
    help = "Load demo people and cases (idempotent) and print the demo logins."

    def handle(self, *args, **options):
        result = demo_load(stdout=self.stdout)
        self.stdout.write(self.style.SUCCESS(f"Demo data ready ({result['cases_created']} new cases)."))
        self.stdout.write("Demo logins (demo data only), and what each person sees:")
        for username, role, _first, _last, password in result["users"]:
            sees = person_access_line(result["people"][username])
            self.stdout.write(f"  {role:<16} {username:<8} {password:<20} {sees}")
