"""The report, as a download from the case page and from the API: the same PDF either way."""

from __future__ import annotations

from django.http import HttpResponse
from django.views.decorators.http import require_GET
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.exceptions import NotAcceptable
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.views import APIView

from casework.cases import selectors
from casework.cases.api import IsInvestigator
from casework.cases.report.render import ReportUnavailable
from casework.cases.report.services import case_report_generate
from casework.people.roles import investigator_required


def _pdf_response(report) -> HttpResponse:
    response = HttpResponse(report.pdf, content_type="application/pdf")
    response["Content-Disposition"] = f'attachment; filename="{report.filename}"'
    response["X-Report-SHA256"] = report.sha256
    response["Cache-Control"] = "no-store"
    return response


@require_GET
@investigator_required
def download(request, reference: str):
    case = selectors.case_get_for_user(request.user, reference)
    try:
        report = case_report_generate(actor=request.user, case=case, via="web")
    except ReportUnavailable as exc:
        return HttpResponse(exc.message, status=503, content_type="text/plain; charset=utf-8")
    return _pdf_response(report)


class PDFRenderer(BaseRenderer):
    """Lets the API's content negotiation accept `Accept: application/pdf`; the view answers
    the PDF itself, and errors are rendered as JSON (finalize_response)."""

    media_type = "application/pdf"
    format = "pdf"
    charset = None
    render_style = "binary"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        return data


class CaseReportApi(APIView):
    permission_classes = [IsInvestigator]
    renderer_classes = [PDFRenderer, JSONRenderer]

    @extend_schema(
        operation_id="cases_report",
        summary="The case report as a PDF",
        description=(
            "The same PDF as the case page's \"Download report\": the case, the agents' findings, the decision "
            "with its reason, tasks, evidence files (name, size, SHA-256) and the case's audit entries with their "
            "hashes. Send `Accept: application/pdf` (or */*). Every report made is audited with its SHA-256, "
            "which the `X-Report-SHA256` header also carries. 503 when the server cannot render PDFs."
        ),
        responses={
            (200, "application/pdf"): OpenApiResponse(OpenApiTypes.BINARY, description="The report (A4 PDF)."),
            (503, "application/json"): OpenApiResponse(description="PDF rendering is not available on this server."),
        },
    )
    def get(self, request, reference: str):
        case = selectors.case_get_for_user(request.user, reference)
        if request.accepted_renderer.format != "pdf":
            raise NotAcceptable("This operation answers application/pdf.")
        return _pdf_response(case_report_generate(actor=request.user, case=case, via="api"))

    def finalize_response(self, request, response, *args, **kwargs):
        # An error is a JSON body whatever the Accept header asked for.
        if getattr(response, "data", None) is not None and response.status_code >= 400:
            request.accepted_renderer, request.accepted_media_type = JSONRenderer(), "application/json"
        return super().finalize_response(request, response, *args, **kwargs)
