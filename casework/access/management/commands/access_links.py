from __future__ import annotations

from django.core.management.base import BaseCommand

from casework.access.links import link_url
from casework.access.models import InfoRequest


class Command(BaseCommand):
    help = ("Print the answer links of open employee requests (what their emails contain). For operators and "
            "demos: with the console email backend, this is how to reach an employee's page.")

    def add_arguments(self, parser):
        parser.add_argument("reference", nargs="?", help="Only this case (e.g. ACC-000004).")

    def handle(self, *args, **options):
        requests = (InfoRequest.objects.filter(kind=InfoRequest.Kind.EMPLOYEE, answered_at__isnull=True,
                                               cancelled_at__isnull=True)
                    .select_related("mutation__case", "recipient").order_by("sent_at"))
        if options["reference"]:
            requests = requests.filter(mutation__case__reference=options["reference"].upper())
        shown = 0
        for request in requests:
            if request.state() != "open":
                continue
            shown += 1
            self.stdout.write(f"{request.mutation.case.reference}  {request.recipient.name} <{request.recipient.email}>"
                              f"  until {request.expires_at:%Y-%m-%d %H:%M} UTC\n  {link_url(request)}")
        if not shown:
            self.stdout.write("No open employee requests.")
