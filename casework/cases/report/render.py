"""HTML to PDF with WeasyPrint. WeasyPrint needs Pango, HarfBuzz and fonts from the system
(`.ci/run` and `make run` install them with apt); without them the report is unavailable,
said so with a 503, and the rest of the product works."""

from __future__ import annotations

from django.conf import settings

from casework.errors import DomainError


class ReportUnavailable(DomainError):
    status_code = 503

    def __init__(self, why: str):
        super().__init__(
            "The PDF report cannot be made on this server: WeasyPrint or the system libraries it needs "
            f"(Pango, HarfBuzz, fonts) are missing ({why}). On Debian or Ubuntu: "
            "apt-get install libpango-1.0-0 libpangoft2-1.0-0 libharfbuzz-subset0 fonts-dejavu-core",
            code="report_unavailable",
        )


def _weasyprint():
    try:
        import weasyprint
    except (ImportError, OSError) as exc:  # OSError: the Python package is there, a library is not
        raise ReportUnavailable(f"{type(exc).__name__}: {str(exc)[:200]}") from exc
    return weasyprint


def pdf_from_html(html: str) -> bytes:
    """One PDF from one HTML document. Nothing is fetched: the stylesheet is in the document,
    and a URL fetcher that refuses every fetch keeps case data (untrusted) from reaching out."""
    weasyprint = _weasyprint()

    def refuse(url: str, *args, **kwargs):
        raise ValueError(f"The case report fetches nothing ({url[:80]}).")

    document = weasyprint.HTML(string=html, base_url=str(settings.BASE_DIR), url_fetcher=refuse)
    return document.write_pdf()
