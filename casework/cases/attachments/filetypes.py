"""Which evidence files are taken: an allow-list of extensions, each checked against the file's
first bytes (its magic number, read by the `filetype` package), so that a renamed program is
refused whatever it is called.

Binary formats must carry their own signature (a ".pdf" that does not start like a PDF is
refused); text formats have none, so a text file must hold no NUL byte and no known binary
signature. The content type stored and served is the one the extension gives, never the one
the uploader's browser claimed.
"""

from __future__ import annotations

from pathlib import PurePosixPath

import filetype
from django.conf import settings
from django.core.exceptions import ValidationError

# extension: (content type, signatures `filetype` may find; None: a text format, no signature)
KNOWN: dict[str, tuple[str, frozenset[str] | None]] = {
    ".pdf": ("application/pdf", frozenset({"pdf"})),
    ".png": ("image/png", frozenset({"png", "apng"})),
    ".jpg": ("image/jpeg", frozenset({"jpg"})),
    ".jpeg": ("image/jpeg", frozenset({"jpg"})),
    ".gif": ("image/gif", frozenset({"gif"})),
    ".webp": ("image/webp", frozenset({"webp"})),
    # Office files are zip archives; `filetype` names the format when it sees its parts.
    ".docx": ("application/vnd.openxmlformats-officedocument.wordprocessingml.document", frozenset({"docx", "zip"})),
    ".xlsx": ("application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", frozenset({"xlsx", "zip"})),
    ".odt": ("application/vnd.oasis.opendocument.text", frozenset({"odt", "zip"})),
    ".ods": ("application/vnd.oasis.opendocument.spreadsheet", frozenset({"ods", "zip"})),
    ".txt": ("text/plain", None),
    ".log": ("text/plain", None),
    ".csv": ("text/csv", None),
    ".json": ("application/json", None),
    ".eml": ("message/rfc822", None),
}
# Bytes read to recognise a file: enough for every signature `filetype` checks (docx needs
# the zip's first entries).
SNIFF_BYTES = 8192


def accepted_extensions() -> list[str]:
    """The extensions taken here: settings.ATTACHMENT_EXTENSIONS, limited to those this module can check."""
    configured = ("." + e.strip().lower().lstrip(".") for e in settings.ATTACHMENT_EXTENSIONS)
    return [ext for ext in configured if ext in KNOWN]


def _refuse(message: str) -> ValidationError:
    return ValidationError({"file": message}, code="refused_type")


def file_check(name: str, head: bytes) -> str:
    """The content type to store for a file of this name starting with these bytes, or a
    ValidationError on `file` that names why it is refused."""
    ext = PurePosixPath(name).suffix.lower()
    accepted = accepted_extensions()
    if ext not in accepted:
        what = f"{ext} files are" if ext else "files without an extension are"
        return_msg = f"Refused: {what} not accepted. Accepted: {', '.join(accepted)}."
        raise _refuse(return_msg)
    content_type, signatures = KNOWN[ext]
    kind = filetype.guess(head)
    if signatures is None:
        if kind is not None or b"\x00" in head:
            found = f"a .{kind.extension} file" if kind is not None else "binary data"
            raise _refuse(f"Refused: {name} is not text; its content is {found}.")
    elif kind is None or kind.extension not in signatures:
        found = f"a .{kind.extension} file" if kind is not None else "not a recognised format"
        raise _refuse(f"Refused: {name} is not a {ext} file; its content is {found}.")
    return content_type
