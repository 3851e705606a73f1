"""The Evidence tab: upload (htmx multipart), list, download. Files are read only through
`download`, which checks that the person may see the case; nothing serves MEDIA_ROOT."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from casework.cases.attachments import selectors, services
from casework.cases.attachments.forms import AttachmentForm
from casework.cases.attachments.http import file_response, refuse_oversized_body
from casework.cases.selectors import case_get_for_user
from casework.errors import DomainError, error_text
from casework.people.roles import investigator_required


def _panel(case, **extra) -> dict:
    return {"case": case, "attachments": list(selectors.attachment_list(case)), "form": AttachmentForm(),
            "editable": not case.is_closed, **extra}


@require_GET
@investigator_required
def panel(request, reference: str):
    case = case_get_for_user(request.user, reference)
    return render(request, "case_attachments/_panel.html", _panel(case))


@require_POST
@investigator_required
def upload(request, reference: str):
    case = case_get_for_user(request.user, reference)
    error, status, uploaded = "", 200, None
    try:
        refuse_oversized_body(request)
        form = AttachmentForm(request.POST, request.FILES)
        if not form.is_valid():
            raise ValidationError({"file": form.errors.get("file") or ["Choose a file."]})
        uploaded = services.attachment_upload(actor=request.user, case=case, upload=form.cleaned_data["file"])
    except DomainError as exc:
        error, status = exc.message, exc.status_code
    except ValidationError as exc:
        error, status = error_text(exc, named=False), 400
    if request.htmx:
        # htmx swaps 4xx answers here too (casework.js lets #case-evidence take them), so the
        # refusal is read where the file was chosen and the status stays honest.
        return render(request, "case_attachments/_panel.html", _panel(case, error=error, uploaded=uploaded),
                      status=status)
    if error:
        messages.error(request, error)
    else:
        messages.success(request, f"{uploaded.original_name} attached (SHA-256 {uploaded.sha256[:12]}…).")
    return redirect("cases:detail", reference=case.reference)


@require_GET
@investigator_required
def download(request, reference: str, pk: int):
    case = case_get_for_user(request.user, reference)
    attachment = selectors.attachment_get(case, pk)
    try:
        services.attachment_download_check(actor=request.user, attachment=attachment)
    except DomainError as exc:
        return render(request, "case_attachments/refused.html", {"case": case, "message": exc.message},
                      status=exc.status_code)
    return file_response(attachment)
