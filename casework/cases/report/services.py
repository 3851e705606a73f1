"""Making a case's report: every report made is an audit entry naming who made it, for which
case, and the SHA-256 of the exact PDF they received."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from django.db import transaction
from django.template.loader import render_to_string
from django.utils import timezone

from audit.services import audit_record, audit_sequence
from casework.cases.models import Case
from casework.cases.redaction import redact_hidden_references
from casework.cases.report.render import pdf_from_html
from casework.cases.report.selectors import report_context


@dataclass(frozen=True)
class CaseReport:
    pdf: bytes
    sha256: str
    filename: str


def case_report_html(*, case: Case, actor) -> str:
    """The report as HTML (what the PDF is made from)."""
    context = report_context(case)
    # `viewer`: whose report it is, for the special-category masking (casework/cases/masking.py).
    context.update({"generated_at": timezone.now(), "generated_by": actor, "viewer": actor})
    return render_to_string("cases/report/report.html", context)


def case_report_generate(*, actor, case: Case, via: str = "web") -> CaseReport:
    """1. Link committed audit entries still pending, so the report carries their hashes.
    2. Render the report's HTML from the case's templates, the references of cases the person
       may not see replaced (casework.cases.redaction), then the PDF.
    3. Record who made it, for which case, by which way (web or api), and the PDF's SHA-256."""
    audit_sequence()
    html = case_report_html(case=case, actor=actor)
    if getattr(actor, "is_authenticated", False):
        # What the page's middleware does to text answers (a reference quoted in an agent's prose
        # or an audit entry's data, of a case this person may not see), done here: a PDF is not text.
        html = redact_hidden_references(actor, html)
    pdf = pdf_from_html(html)
    digest = hashlib.sha256(pdf).hexdigest()
    with transaction.atomic():
        audit_record(actor=actor, action="case.report_downloaded", case=case, obj=case,
                     data={"sha256": digest, "bytes": len(pdf), "via": via, "format": "pdf"})
    return CaseReport(pdf=pdf, sha256=digest, filename=f"{case.reference}-report.pdf")
