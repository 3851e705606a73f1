"""`manage.py access_links` works in the environment `make run` gives (issue 13): with no
SECRET_KEY exported it reads var/secret_key as bin/run does, so the links it prints are
signed with the key the server checks them with."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command

from casework.access.links import link_check, link_url
from tests.ops.test_ops import _django


def test_without_secret_key_in_the_environment_manage_py_reads_var_secret_key(tmp_path):
    (tmp_path / "secret_key").write_text("key-that-make-run-generated-0123456789abcdefghijklmnop\n")
    result = _django(["shell", "-c", "from django.conf import settings; print(settings.SECRET_KEY)"], tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "key-that-make-run-generated-0123456789abcdefghijklmnop"


def test_an_exported_secret_key_still_wins(tmp_path):
    (tmp_path / "secret_key").write_text("the-file-key-0123456789abcdefghijklmnopqrstuvwxyz0123\n")
    result = _django(["shell", "-c", "from django.conf import settings; print(settings.SECRET_KEY)"], tmp_path,
                     SECRET_KEY="the-exported-key-0123456789abcdefghijklmnopqrstuvwxyz")
    assert result.stdout.strip().splitlines()[-1] == "the-exported-key-0123456789abcdefghijklmnopqrstuvwxyz"


@pytest.mark.django_db
def test_the_links_it_prints_are_accepted(asked):
    out = io.StringIO()
    call_command("access_links", asked.mutation.case.reference, stdout=out)
    printed = out.getvalue().split()[-1]
    assert printed == link_url(asked)
    assert link_check(printed.rstrip("/").split("/")[-1]).ok
