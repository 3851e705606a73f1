"""Customers and KB articles to and from CSV: all or nothing, errors naming row and field."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command

from casework.support.csv_io import CsvRefused, export_customers, import_customers, import_kb_articles
from casework.support.models import Customer, KBArticle
from casework.support.search import kb_search

pytestmark = pytest.mark.django_db

CUSTOMERS = """customer_id,name,email,plan,tenure_months,seats,region,vip
CUST-101,Ana,ana@example.com,enterprise,24,50,us-west,true
CUST-102,Bo,,free,1,1,eu-west,no
"""


def test_customers_import_and_export_round_trip():
    assert import_customers(actor="system", file=io.BytesIO(CUSTOMERS.encode())) == 2
    assert Customer.objects.get(customer_id="CUST-101").vip is True
    out = io.StringIO()
    assert export_customers(out) == 2
    Customer.objects.all().delete()
    assert import_customers(actor="system", file=io.StringIO(out.getvalue())) == 2
    assert Customer.objects.get(customer_id="CUST-102").plan == "free"


def test_one_bad_row_refuses_the_whole_file_naming_row_and_field():
    bad = CUSTOMERS + "CUST-103,Cy,,platinum,x,0,eu,maybe\nCUST-101,Dup,,free,1,1,eu,no\n"
    with pytest.raises(CsvRefused) as refused:
        import_customers(actor="system", file=io.StringIO(bad))
    errors = "\n".join(refused.value.errors)
    assert "Row 4, tenure_months" in errors and "Row 4, vip" in errors and "Row 4, plan" in errors
    assert "Row 5, customer_id" in errors and "row 2" in errors
    assert not Customer.objects.exists()


def test_kb_import_is_searchable_and_a_missing_column_is_refused():
    good = 'article_id,title,category,body\nkb_001,Resolving double charges,billing,"Charged twice? Refund in 5 days."\n'
    assert import_kb_articles(actor="system", file=io.StringIO(good)) == 1
    assert [h.article_id for h in kb_search("double charge", category="billing")] == ["kb_001"]
    assert kb_search("double charge", category="technical") == []
    with pytest.raises(CsvRefused, match="Row 1"):
        import_kb_articles(actor="system", file=io.StringIO("article_id,title\nkb_002,x\n"))
    with pytest.raises(CsvRefused, match="Row 2, category"):
        import_kb_articles(actor="system", file=io.StringIO("article_id,title,category,body\nkb_003,T,sales,B\n"))
    assert KBArticle.objects.count() == 1


def test_the_commands_import_and_export(tmp_path):
    path = tmp_path / "customers.csv"
    path.write_text(CUSTOMERS)
    call_command("import_support_data", customers=str(path), stdout=io.StringIO())
    assert Customer.objects.count() == 2
    out = tmp_path / "out.csv"
    call_command("export_support_data", customers=str(out), stdout=io.StringIO())
    assert out.read_text().startswith("customer_id,name")
    path.write_text("customer_id,plan\nCUST-9,gold\n")
    with pytest.raises(CommandError, match="Row 2, plan"):
        call_command("import_support_data", customers=str(path), stdout=io.StringIO())
