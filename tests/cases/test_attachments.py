"""Evidence files: stored through the storage API, hashed into the audit trail, size-limited,
type-checked by extension and content, and read only by people who may see the case."""

from __future__ import annotations

import hashlib

import pytest
from django.core.exceptions import ValidationError
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from audit.models import AuditEntry
from casework.cases.attachments.models import Attachment
from casework.cases.attachments.services import FileTooLarge, attachment_upload
from casework.cases.services import case_close, case_create
from casework.errors import Conflict
from tests.access.conftest import asked, mark, org, submit  # noqa: F401 - the employee with a signed link

pytestmark = pytest.mark.django_db

PDF = b"%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n"
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + b"\x00" * 40
EXE = b"MZ\x90\x00\x03\x00\x00\x00\x04\x00\x00\x00\xff\xff\x00\x00" + b"\x00" * 100


@pytest.fixture(autouse=True)
def _media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"


@pytest.fixture
def case(alice):
    return case_create(actor=alice, case_type="fraud_alert", title="Cycling")


def upload(name, content, content_type="application/octet-stream"):
    return SimpleUploadedFile(name, content, content_type=content_type)


def test_a_file_is_stored_hashed_and_audited(case, alice, settings):
    attachment = attachment_upload(actor=alice, case=case, upload=upload("statement.pdf", PDF))
    digest = hashlib.sha256(PDF).hexdigest()
    assert (attachment.original_name, attachment.size, attachment.sha256, attachment.content_type) == (
        "statement.pdf", len(PDF), digest, "application/pdf")
    stored = settings.MEDIA_ROOT / attachment.file.name
    assert stored.read_bytes() == PDF and "statement" not in attachment.file.name  # a random stored name
    entry = AuditEntry.objects.get(case_id=case.pk, action="attachment.uploaded")
    assert entry.actor == "alice" and entry.data["sha256"] == digest and entry.data["size"] == len(PDF)


def test_a_file_over_the_limit_is_refused_naming_the_limit(case, alice, settings):
    settings.ATTACHMENT_MAX_BYTES = 1000
    with pytest.raises(FileTooLarge, match=r"the limit is 1000\xa0bytes \(ATTACHMENT_MAX_BYTES = 1000 bytes\)"):
        attachment_upload(actor=alice, case=case, upload=upload("big.pdf", PDF + b" " * 1000))
    assert not Attachment.objects.exists()


@pytest.mark.parametrize(("name", "content", "message"), [
    ("tool.exe", EXE, "Refused: .exe files are not accepted."),
    ("invoice.pdf", EXE, "Refused: invoice.pdf is not a .pdf file; its content is a .exe file."),
    ("notes.txt", EXE, "Refused: notes.txt is not text; its content is a .exe file."),
    ("photo.png", PDF, "Refused: photo.png is not a .png file; its content is a .pdf file."),
    ("README", b"hello", "Refused: files without an extension are not accepted."),
    ("empty.txt", b"", "Refused: empty.txt is empty."),
])
def test_refused_types_are_named(case, alice, settings, name, content, message):
    with pytest.raises(ValidationError) as refused:
        attachment_upload(actor=alice, case=case, upload=upload(name, content))
    assert refused.value.message_dict["file"][0].startswith(message)
    assert not Attachment.objects.exists() and not list((settings.MEDIA_ROOT).glob("**/*.*"))


def test_text_and_images_are_taken_with_the_type_their_extension_gives(case, alice):
    text = attachment_upload(actor=alice, case=case, upload=upload("C:\\Users\\x\\call notes.txt", "Bonjour é".encode(),
                                                                     "application/x-msdownload"))
    assert (text.original_name, text.content_type) == ("call notes.txt", "text/plain")
    image = attachment_upload(actor=alice, case=case, upload=upload("screen.PNG", PNG))
    assert image.content_type == "image/png"


def test_a_closed_case_takes_no_more_evidence(case, alice):
    case_close(actor=alice, case=case, outcome="legit", reason="Known customer.")
    with pytest.raises(Conflict, match="closed"):
        attachment_upload(actor=alice, case=case, upload=upload("late.pdf", PDF))


# --- pages ---------------------------------------------------------------------------------

def test_the_page_uploads_with_htmx_and_lists_the_file(alice_client, case):
    response = alice_client.post(f"/cases/{case.reference}/attachments/upload/",
                                 {"file": upload("statement.pdf", PDF)}, HTTP_HX_REQUEST="true")
    html = response.content.decode()
    digest = hashlib.sha256(PDF).hexdigest()
    assert response.status_code == 200 and "statement.pdf attached" in html
    assert f'<code title="{digest}">{digest[:12]}…</code>' in html and "<td>alice</td>" in html
    timeline = alice_client.get(f"/cases/{case.reference}/timeline/").content.decode()
    assert f"attachment: uploaded <span class=\"muted\">statement.pdf · sha256 {digest[:12]}…</span>" in timeline


def test_the_page_answers_a_refusal_with_a_4xx_naming_it(alice_client, case, settings):
    url = f"/cases/{case.reference}/attachments/upload/"
    refused = alice_client.post(url, {"file": upload("tool.exe", EXE)}, HTTP_HX_REQUEST="true")
    assert refused.status_code == 400 and "Refused: .exe files are not accepted." in refused.content.decode()
    settings.ATTACHMENT_MAX_BYTES = 100
    large = alice_client.post(url, {"file": upload("big.pdf", PDF * 10)}, HTTP_HX_REQUEST="true")
    assert large.status_code == 413 and "the limit is 100" in large.content.decode()
    missing = alice_client.post(url, {}, HTTP_HX_REQUEST="true")
    assert missing.status_code == 400 and "This field is required." in missing.content.decode()


def test_a_body_larger_than_the_limit_is_refused_before_it_is_read(api, case, settings):
    settings.ATTACHMENT_MAX_BYTES = 10
    response = api.post(f"/api/cases/{case.reference}/attachments/", {"file": upload("big.pdf", PDF * 3000)},
                        format="multipart")
    assert response.status_code == 413 and response.json()["detail"] == (
        "Refused: the file is too large; the limit is 10\xa0bytes (ATTACHMENT_MAX_BYTES = 10 bytes).")


def test_the_download_streams_the_file_to_an_investigator_only(alice, mona, admin_user, case):
    attachment = attachment_upload(actor=alice, case=case, upload=upload("statement.pdf", PDF))
    url = f"/cases/{case.reference}/attachments/{attachment.pk}/download/"
    investigator = Client()
    investigator.force_login(alice)
    response = investigator.get(url)
    assert response.status_code == 200 and b"".join(response.streaming_content) == PDF
    assert response["Content-Disposition"] == 'attachment; filename="statement.pdf"'
    assert response["X-Content-Type-Options"] == "nosniff" and response["Content-Type"] == "application/pdf"
    assert response["X-Evidence-SHA256"] == attachment.sha256
    downloaded = AuditEntry.objects.get(case_id=case.pk, action="attachment.downloaded")
    assert downloaded.actor == "alice" and downloaded.data["sha256"] == attachment.sha256

    manager = Client()
    manager.force_login(mona)
    assert manager.get(url).status_code == 403
    anonymous = Client().get(url)
    assert anonymous.status_code == 302 and anonymous["Location"].startswith("/login/")
    # another case's reference with this attachment's id: not found
    other = case_create(actor=alice, case_type="fraud_alert", title="Other")
    assert investigator.get(f"/cases/{other.reference}/attachments/{attachment.pk}/download/").status_code == 404
    # MEDIA_ROOT has no URL: the stored name is no way in
    assert Client().get(f"/media/{attachment.file.name}").status_code in (302, 404)
    assert investigator.get(f"/{attachment.file.name}").status_code == 404
    assert AuditEntry.objects.filter(action="attachment.downloaded").count() == 1


def test_an_employee_link_holder_cannot_download(alice, case, asked):  # noqa: F811 - the fixture
    """The employee with a signed answer link has no account: the link opens their answer page
    and nothing else."""
    from casework.access.links import link_token

    attachment = attachment_upload(actor=alice, case=asked.mutation.case, upload=upload("statement.pdf", PDF))
    holder = Client()
    assert holder.get(f"/access/respond/{link_token(asked)}/").status_code == 200
    response = holder.get(f"/cases/{asked.mutation.case.reference}/attachments/{attachment.pk}/download/")
    assert response.status_code == 302 and response["Location"].startswith("/login/")


# --- API -----------------------------------------------------------------------------------

def test_the_api_uploads_lists_and_downloads(api, case):
    base = f"/api/cases/{case.reference}/attachments/"
    created = api.post(base, {"file": upload("statement.pdf", PDF)}, format="multipart")
    assert created.status_code == 201 and created.json()["sha256"] == hashlib.sha256(PDF).hexdigest()
    listed = api.get(base).json()
    assert [a["original_name"] for a in listed] == ["statement.pdf"] and listed[0]["uploaded_by"] == "alice"
    download = api.get(listed[0]["download_url"])
    assert download.status_code == 200 and b"".join(download.streaming_content) == PDF
    refused = api.post(base, {"file": upload("tool.exe", EXE)}, format="multipart")
    assert refused.status_code == 400 and refused.json()["file"] == [
        "Refused: .exe files are not accepted. Accepted: .pdf, .png, .jpg, .jpeg, .gif, .webp, .txt, .csv, "
        ".json, .eml, .log, .docx, .xlsx, .odt, .ods."]
    assert api.post(base, {"file": "x"}, format="json").status_code == 415


def test_a_stored_file_that_changed_is_not_served_and_the_trail_says_so(alice_client, api, alice, case, settings):
    attachment = attachment_upload(actor=alice, case=case, upload=upload("statement.pdf", PDF))
    (settings.MEDIA_ROOT / attachment.file.name).write_bytes(PDF.replace(b"1.4", b"1.7"))
    page = alice_client.get(f"/cases/{case.reference}/attachments/{attachment.pk}/download/")
    assert page.status_code == 409 and "no longer matches its SHA-256" in page.content.decode()
    response = api.get(f"/api/cases/{case.reference}/attachments/{attachment.pk}/download/")
    assert response.status_code == 409 and response.json()["code"] == "file_altered"
    (settings.MEDIA_ROOT / attachment.file.name).unlink()
    assert "is missing from storage" in api.get(f"/api/cases/{case.reference}/attachments/{attachment.pk}/download/"
                                                 ).json()["detail"]
    failed = AuditEntry.objects.filter(case_id=case.pk, action="attachment.integrity_failed")
    assert [e.data["found"] == "missing" for e in failed.order_by("id")] == [False, False, True]
    assert not AuditEntry.objects.filter(action="attachment.downloaded").exists()


def test_the_admin_lists_evidence_and_tasks_read_only_without_a_file_link(admin_user, alice, case):
    from casework.cases.tasks.services import task_create

    attachment = attachment_upload(actor=alice, case=case, upload=upload("statement.pdf", PDF))
    task = task_create(actor=alice, case=case, title="Call the customer")
    admin = Client()
    admin.force_login(admin_user)
    listing = admin.get("/admin/case_attachments/attachment/").content.decode()
    assert "statement.pdf" in listing and attachment.sha256 in listing
    detail = admin.get(f"/admin/case_attachments/attachment/{attachment.pk}/change/").content.decode()
    assert attachment.sha256 in detail and attachment.file.name not in detail and "Save" not in detail
    assert "Call the customer" in admin.get("/admin/case_tasks/task/").content.decode()
    assert admin.post(f"/admin/case_tasks/task/{task.pk}/delete/", {"post": "yes"}).status_code == 403


def test_the_accepted_extensions_come_from_settings(case, alice, settings):
    settings.ATTACHMENT_EXTENSIONS = ["PDF", ".txt", ".exe"]  # with or without the dot; .exe is never checkable
    with pytest.raises(ValidationError) as refused:
        attachment_upload(actor=alice, case=case, upload=upload("screen.png", PNG))
    assert refused.value.message_dict["file"] == ["Refused: .png files are not accepted. Accepted: .pdf, .txt."]
    assert attachment_upload(actor=alice, case=case, upload=upload("statement.pdf", PDF)).content_type == "application/pdf"
