"""Content-Security-Policy: scripts only from this site, never inline; and no template
brings an inline script or event handler back (the policy would silently break it)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE_DIRS = [ROOT / "templates", *ROOT.glob("casework/*/templates"), *ROOT.glob("agents/*/templates"),
                 *ROOT.glob("agents/templates")]
INLINE_SCRIPT = re.compile(r"<script(?![^>]*\bsrc=)[^>]*>", re.I)
INLINE_HANDLER = re.compile(r"""\son[a-z]+\s*=\s*["']|\shx-on[:-]""", re.I)


def policy(response) -> dict[str, str]:
    header = response["Content-Security-Policy"]
    return {part.split()[0]: part.strip() for part in header.split(";") if part.strip()}


def test_pages_send_a_policy_without_inline_scripts(alice_client):
    directives = policy(alice_client.get("/cases/"))
    assert directives["script-src"] == "script-src 'self'"
    assert "unsafe-inline" not in directives["script-src"] and "unsafe-eval" not in directives["script-src"]
    assert directives["default-src"] == "default-src 'self'"
    assert directives["frame-ancestors"] == "frame-ancestors 'none'"


def test_the_login_page_and_swagger_ui_carry_no_inline_script(alice_client):
    for response in (Client().get("/login/"), alice_client.get("/api/docs/")):
        assert response.status_code == 200
        assert "Content-Security-Policy" in response
        assert not INLINE_SCRIPT.search(response.content.decode()), response.request["PATH_INFO"]


def test_no_template_has_an_inline_script_or_event_handler():
    offenders = []
    for directory in TEMPLATE_DIRS:
        for path in directory.rglob("*.html"):
            text = path.read_text(encoding="utf-8")
            for pattern in (INLINE_SCRIPT, INLINE_HANDLER):
                for match in pattern.finditer(text):
                    line = text.count("\n", 0, match.start()) + 1
                    offenders.append(f"{path.relative_to(ROOT)}:{line}: {match.group(0).strip()}")
    assert not offenders, ("Inline scripts and handlers break under the Content-Security-Policy; "
                           "move them to static/js/:\n" + "\n".join(offenders))
