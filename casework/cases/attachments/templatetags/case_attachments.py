"""`{% case_attachments_panel case %}`: the Evidence tab's section, on every case type's page."""

from __future__ import annotations

from django import template
from django.conf import settings
from django.template.defaultfilters import filesizeformat

from casework.cases.attachments import selectors
from casework.cases.attachments.filetypes import accepted_extensions
from casework.cases.attachments.forms import AttachmentForm

register = template.Library()


@register.inclusion_tag("case_attachments/_panel.html", takes_context=True)
def case_attachments_panel(context, case):
    return {"case": case, "attachments": list(selectors.attachment_list(case)), "form": AttachmentForm(),
            "editable": not case.is_closed, "request": context.get("request"),
            "csrf_token": context.get("csrf_token")}


@register.simple_tag
def attachment_limits() -> str:
    """"Up to 10.0 MB: .pdf, .png, ..." (escaped by the template engine like any string)."""
    return f"Up to {filesizeformat(settings.ATTACHMENT_MAX_BYTES)}: {', '.join(accepted_extensions())}"
