"""CSV import: one parser for the upload page and `manage.py import_alerts`."""

from __future__ import annotations

import csv
import io
import threading

import pytest
from django.core.management import CommandError, call_command

from casework.cases.models import Case
from casework.fraud.csv_import import CsvRefused, import_alerts_csv, read_rows
from casework.fraud.demo_data import CSV_COLUMNS, DEMO_CSV, demo_alerts
from casework.fraud.models import Alert
from tests.fraud.conftest import CLEAN, CYCLING

pytestmark = pytest.mark.django_db


def csv_text(rows, columns=CSV_COLUMNS) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=columns, lineterminator="\n", extrasaction="ignore")
    writer.writeheader()
    for row in rows:
        writer.writerow(row)
    return out.getvalue()


def rows(n):
    return [{**CLEAN, "account_id": f"ACC-{i}"} for i in range(1, n + 1)]


def test_it_imports_every_row(alice):
    report = import_alerts_csv(actor=alice, data=csv_text([CYCLING, CLEAN]).encode())
    assert not report.refused
    assert [a.account.account_id for a in report.created] == ["ACC-1043", "ACC-2001"]
    assert report.summary() == "Imported 2 alerts."
    assert Case.objects.filter(case_type="fraud_alert").count() == 2


def test_a_bad_row_imports_nothing_and_names_line_and_field(alice):
    data = rows(4)
    data[1]["vpn_usage_pct"] = 140  # line 3: the header is line 1
    data[3]["deposits_count"] = "-2"  # line 5
    report = import_alerts_csv(actor=alice, data=csv_text(data))
    assert report.refused
    assert [str(e) for e in report.errors] == [
        "line 3: vpn_usage_pct: Must be between 0 and 100; got '140'.",
        "line 5: deposits_count: Must be 0 or more; got '-2'.",
    ]
    assert report.summary() == "Nothing imported: 2 of 4 rows have errors."
    assert not Alert.objects.exists()


def test_skip_invalid_imports_the_good_rows_and_reports_the_rest(alice):
    data = rows(4)
    data[1]["kyc_face_match_score"] = "1.7"
    report = import_alerts_csv(actor=alice, data=csv_text(data), skip_invalid=True)
    assert not report.refused
    assert len(report.created) == 3
    assert report.skipped == 1
    assert [(e.line, e.field) for e in report.errors] == [(3, "kyc_face_match_score")]
    assert report.summary() == "Imported 3 alerts; skipped 1 invalid row."


def test_an_unknown_column_refuses_the_file_by_name(alice):
    text = csv_text([{**CLEAN, "colour": "red"}], columns=(*CSV_COLUMNS, "colour"))
    with pytest.raises(CsvRefused) as exc:
        import_alerts_csv(actor=alice, data=text, skip_invalid=True)
    assert "line 1: unknown column 'colour'" in exc.value.errors
    assert not Alert.objects.exists()


def test_a_missing_required_column_refuses_the_file_by_name(alice):
    columns = tuple(c for c in CSV_COLUMNS if c != "ip_shared_count")
    with pytest.raises(CsvRefused) as exc:
        import_alerts_csv(actor=alice, data=csv_text([CLEAN], columns=columns))
    assert "line 1: missing required column 'ip_shared_count'" in exc.value.errors


def test_a_repeated_column_is_refused():
    header = ",".join((*CSV_COLUMNS, "account_id"))
    with pytest.raises(CsvRefused) as exc:
        read_rows(header + "\n")
    assert "line 1: column 'account_id' appears more than once" in exc.value.errors


def test_optional_score_columns_and_risk_factor_lists(alice):
    columns = (*CSV_COLUMNS, "fraud_probability", "risk_level", "risk_factors")
    data = [
        {**CLEAN, "account_id": "ACC-1", "fraud_probability": "0.7", "risk_level": "high",
         "risk_factors": "Fast cycling | Shared device"},
        {**CLEAN, "account_id": "ACC-2", "risk_factors": '["One", "Two"]'},
        {**CLEAN, "account_id": "ACC-3"},  # empty optional cells mean "not sent"
    ]
    report = import_alerts_csv(actor=alice, data=csv_text(data, columns))
    first, second, third = report.created
    assert first.score_source == "upstream" and first.risk_factors == ["Fast cycling", "Shared device"]
    assert first.case.priority == "high"
    assert second.risk_factors == ["One", "Two"]
    assert third.score_source == "casework_scorer"


def test_a_row_with_too_many_values_is_an_error_on_its_line(alice):
    text = csv_text([CLEAN]) + ",".join(["ACC-9"] + ["1"] * 14) + "\n"
    report = import_alerts_csv(actor=alice, data=text)
    assert report.refused
    assert str(report.errors[0]).startswith("line 3: has 15 values but the header has 14 columns")


def test_an_empty_required_cell_is_required(alice):
    report = import_alerts_csv(actor=alice, data=csv_text([{**CLEAN, "account_age_days": ""}]))
    assert [str(e) for e in report.errors] == ["line 2: account_age_days: This field is required."]


def test_line_numbers_follow_the_file_across_blank_lines_and_multiline_cells(alice):
    header = ",".join(CSV_COLUMNS)
    good = ",".join(str(CLEAN[c]) for c in CSV_COLUMNS)
    bad = good.replace("ACC-2001", '"ACC\n2001"')  # a quoted cell spanning two lines, and a bad id
    text = f"{header}\n{good}\n\n{bad}\n{good.replace('0.94', '9.4')}\n"
    numbers, _, _ = read_rows(text)
    assert numbers == [2, 4, 6]
    report = import_alerts_csv(actor=alice, data=text)
    assert [(e.line, e.field) for e in report.errors] == [(4, "account_id"), (6, "kyc_face_match_score")]


def test_it_refuses_a_file_that_is_not_utf8():
    with pytest.raises(CsvRefused) as exc:
        read_rows(",".join(CSV_COLUMNS).encode() + b"\nACC-\xe9,1\n")
    assert "not UTF-8" in exc.value.errors[0]


def test_it_accepts_a_byte_order_mark(alice):
    report = import_alerts_csv(actor=alice, data=b"\xef\xbb\xbf" + csv_text([CLEAN]).encode())
    assert len(report.created) == 1


def test_a_header_without_rows_is_refused():
    with pytest.raises(CsvRefused, match="no rows"):
        read_rows(",".join(CSV_COLUMNS) + "\n")


def test_the_demo_csv_matches_the_generator():
    assert DEMO_CSV.read_text(encoding="utf-8") == csv_text([d.row for d in demo_alerts()])


# --- manage.py import_alerts -----------------------------------------------------------

def write(tmp_path, text):
    path = tmp_path / "alerts.csv"
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_the_command_imports_a_file(tmp_path, capsys):
    call_command("import_alerts", write(tmp_path, csv_text(rows(3))))
    out = capsys.readouterr().out
    assert "Imported 3 alerts." in out
    assert "Cases FRA-000001 to FRA-000003." in out
    assert Alert.objects.count() == 3


def test_the_command_refuses_a_file_with_bad_rows(tmp_path, capsys):
    data = rows(3)
    data[2]["vpn_usage_pct"] = "-1"
    with pytest.raises(CommandError, match="Nothing imported: 1 of 3 rows have errors"):
        call_command("import_alerts", write(tmp_path, csv_text(data)))
    err = capsys.readouterr().err
    assert "line 4: vpn_usage_pct: Must be between 0 and 100; got '-1'." in err
    assert "Line numbers count the header as line 1." in err
    assert not Alert.objects.exists()


def test_the_command_skips_bad_rows_when_asked(tmp_path, capsys):
    data = rows(3)
    data[0]["countries_accessed_count"] = "many"
    call_command("import_alerts", write(tmp_path, csv_text(data)), "--skip-invalid")
    out = capsys.readouterr().out
    assert "Skipped " in out and "line 2: countries_accessed_count: Must be a whole number; got 'many'." in out
    assert "Imported 2 alerts; skipped 1 invalid row." in out
    assert Alert.objects.count() == 2


def test_the_command_names_an_unknown_column(tmp_path, capsys):
    text = csv_text([CLEAN]).replace("ip_shared_count", "ip_shared", 1)
    with pytest.raises(CommandError):
        call_command("import_alerts", write(tmp_path, text), "--skip-invalid")
    err = capsys.readouterr().err
    assert "line 1: unknown column 'ip_shared'" in err
    assert "line 1: missing required column 'ip_shared_count'" in err


def test_the_command_records_the_user(tmp_path, alice):
    from audit.models import AuditEntry

    call_command("import_alerts", write(tmp_path, csv_text(rows(1))), "--user", "alice")
    entry = AuditEntry.objects.get(action="fraud.alert_created")
    assert entry.actor == "alice" and entry.data["via"] == "csv_command"


def test_the_command_imports_the_demo_csv(capsys):
    call_command("import_alerts", str(DEMO_CSV))
    assert Alert.objects.count() == len(demo_alerts())


def test_the_command_fails_for_a_missing_file():
    with pytest.raises(CommandError, match="no such file"):
        call_command("import_alerts", "/nonexistent/alerts.csv")


@pytest.mark.django_db(transaction=True)  # real commits, seen from another connection
def test_a_large_file_is_committed_in_batches(alice, monkeypatch):
    from agents.tasks import run_pipeline
    from casework.fraud import csv_import, services

    monkeypatch.setattr(run_pipeline, "delay", lambda run_id: None)  # the investigations are not the point
    monkeypatch.setattr(csv_import, "COMMIT_BATCH", 2)
    seen_elsewhere: list[list[str]] = []  # after each batch: the alerts another connection sees
    real_bulk = services.alerts_create_bulk

    def bulk_then_look(**kwargs):
        created = real_bulk(**kwargs)
        seen_elsewhere.append(_committed_accounts())
        return created

    monkeypatch.setattr(services, "alerts_create_bulk", bulk_then_look)
    data = rows(5)
    data[2]["vpn_usage_pct"] = "101"

    report = import_alerts_csv(actor=alice, data=csv_text(data), skip_invalid=True)

    assert [a.account.account_id for a in report.created] == ["ACC-1", "ACC-2", "ACC-4", "ACC-5"]
    assert report.skipped == 1
    # The first batch was committed (visible to others) before the second was written.
    assert seen_elsewhere == [["ACC-1", "ACC-2"], ["ACC-1", "ACC-2", "ACC-4", "ACC-5"]]


def _committed_accounts() -> list[str]:
    """The alerts' accounts as another connection (another thread's) sees them: committed rows only."""
    from django.db import connection

    seen: list[str] = []

    def look():
        try:
            seen.extend(Alert.objects.order_by("account__account_id").values_list("account__account_id", flat=True))
        finally:
            connection.close()

    other = threading.Thread(target=look)
    other.start()
    other.join(timeout=30)
    return seen
