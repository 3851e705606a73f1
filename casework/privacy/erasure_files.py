"""The files an erasure reaches: trace files under TRACE_DIR and attachments in storage.

A trace file (one OTLP/JSON line per batch of spans) is text: the subject's identifiers are
replaced in place, the file written to a temporary name beside it and moved over the old one, so
a reader never sees half a file. An attachment is deleted with its row on a case the erasure
removes (the row's delete commits first: a rollback keeps both); on a case kept for a legal duty
a text file is pseudonymised like a trace, and a binary one (a PDF, an image) is kept and
reported, since its text cannot be reliably found and replaced.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

from django.conf import settings
from django.core.files.base import ContentFile
from django.db import transaction

from agents.models import AgentCall, AgentRun
from audit.tracing import flush_trace_files
from casework.cases.attachments.models import Attachment
from casework.privacy.scrub import Identifiers, scrub_all


def trace_dir() -> Path:
    return Path(getattr(settings, "TRACE_DIR", "") or ".")


def case_trace_files(case_ids: list[int]) -> list[Path]:
    """The trace files of the agent runs (and their calls) on these cases."""
    runs = AgentRun.objects.filter(case__in=case_ids)
    ids = {t for t in runs.values_list("trace_id", flat=True) if t} | {
        t for t in AgentCall.objects.filter(run__in=runs).values_list("trace_id", flat=True) if t}
    return sorted(p for p in (trace_dir() / f"{t}.jsonl" for t in ids) if p.is_file())


def _rewrite(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".erasure-", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def traces_scrub(paths: Iterable[Path], subjects: list[Identifiers], *, weak: bool) -> int:
    """Replace the subjects' identifiers in these text files; return how many changed."""
    flush_trace_files()  # spans still queued in this process reach their files first
    changed = 0
    for path in paths:
        try:
            text = path.read_text(encoding="utf-8", errors="surrogateescape")
        except FileNotFoundError:
            continue
        new, c = scrub_all(text, subjects, weak=weak)
        if c:
            _rewrite(path, new)
            changed += 1
    return changed


def trace_dir_sweep(subjects: list[Identifiers]) -> int:
    """Every trace file, for the subjects' strong identifiers (a trace of something not tied to
    the subject's cases: an inbound message's request, a chat)."""
    root = trace_dir()
    if not root.is_dir():
        return 0
    terms = [t.lower().encode() for ids in subjects for t in ids.search_terms()]
    candidates = []
    for path in root.rglob("*.jsonl"):
        try:
            data = path.read_bytes().lower()
        except OSError:
            continue
        if any(term in data for term in terms):
            candidates.append(path)
    return traces_scrub(candidates, subjects, weak=False)


def attachments_delete(case_ids: list[int]) -> int:
    """Delete the attachments of these cases, each file once its row's delete has committed."""
    attachments = list(Attachment.objects.filter(case__in=case_ids))
    for attachment in attachments:
        transaction.on_commit(lambda f=attachment.file: f.storage.delete(f.name))
    return Attachment.objects.filter(case__in=case_ids).delete()[0]


def attachments_pseudonymise(case_ids: list[int], subjects: list[Identifiers]) -> tuple[int, list[str]]:
    """Pseudonymise text attachments of these cases in storage (a new file, the old deleted on
    commit); return how many changed and the names of the binary ones kept as they are."""
    changed, kept = 0, []
    for attachment in Attachment.objects.filter(case__in=case_ids).select_related("case"):
        try:
            with attachment.file.open("rb") as f:
                content = f.read()
        except OSError:
            continue
        try:
            text = content.decode("utf-8")
        except UnicodeDecodeError:
            kept.append(f"{attachment.case.reference}: attachment #{attachment.pk}")
            continue
        new, c = scrub_all(text, subjects, weak=True)
        if not c:
            continue
        data = new.encode("utf-8")
        old_name = attachment.file.name
        storage = attachment.file.storage
        name = storage.save(old_name, ContentFile(data))
        Attachment.objects.filter(pk=attachment.pk).update(
            file=name, size=len(data), sha256=hashlib.sha256(data).hexdigest())
        transaction.on_commit(lambda n=old_name, s=storage: s.delete(n))
        changed += 1
    return changed, kept
