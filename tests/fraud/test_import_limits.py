"""Huge values in an import row (issue 13): income 1e300 gets its line and field named, on
the upload page and in `manage.py import_alerts`; never a traceback, nothing imported."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command

from casework.fraud.csv_import import import_alerts_csv
from casework.fraud.models import Alert
from tests.fraud.conftest import CLEAN
from tests.fraud.test_import import csv_text, rows, write

pytestmark = pytest.mark.django_db

HUGE = "line 3: declared_income_annual: Must be at most 1,000,000,000,000; got '1e300'."


def huge_file() -> str:
    data = rows(2)
    data[1]["declared_income_annual"] = "1e300"
    return csv_text(data)


def test_a_huge_amount_is_refused_with_its_line_and_field(alice):
    report = import_alerts_csv(actor=alice, data=huge_file().encode())
    assert report.refused
    assert [str(e) for e in report.errors] == [HUGE]
    assert not Alert.objects.exists()


@pytest.mark.parametrize("field", ["deposits_total", "withdrawals_total", "deposits_vs_income_ratio",
                                   "deposit_withdraw_cycle_days_avg"])
def test_every_amount_ratio_and_day_count_has_a_ceiling(alice, field):
    report = import_alerts_csv(actor=alice, data=csv_text([{**CLEAN, field: "1e300"}]).encode())
    assert [e.field for e in report.errors] == [field]


def test_the_upload_page_names_the_line_and_field(alice_client):
    response = alice_client.post("/fraud/import/", {
        "file": SimpleUploadedFile("alerts.csv", huge_file().encode(), "text/csv")})
    assert response.status_code == 400
    assert ("<td>3</td><td><code>declared_income_annual</code></td>"
            "<td>Must be at most 1,000,000,000,000; got &#x27;1e300&#x27;.</td>") in response.content.decode()
    assert not Alert.objects.exists()


def test_the_command_names_the_line_and_field(tmp_path, capsys):
    with pytest.raises(CommandError, match="Nothing imported: 1 of 2 rows have errors"):
        call_command("import_alerts", write(tmp_path, huge_file()))
    assert HUGE in capsys.readouterr().err


