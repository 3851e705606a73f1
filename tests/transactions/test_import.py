"""CSV import: all or nothing, errors naming the file line and the field."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command

from casework.transactions.models import CardAccount, Transaction

pytestmark = pytest.mark.django_db

HEADER = "transaction_id,account_id,card_last4,amount,currency,merchant,mcc,country,channel,occurred_at,home_country\n"
GOOD = "TX-1,CARD-1,1111,12.50,EUR,Grocer,5411,NL,pos,2026-03-01T10:00:00Z,NL\n"


def upload(client, text: str):
    return client.post("/transactions/", {"file": SimpleUploadedFile("history.csv", text.encode(), "text/csv")})


def test_a_good_file_is_imported(alice_client):
    response = upload(alice_client, HEADER + GOOD + GOOD.replace("TX-1", "TX-2"))
    assert response.status_code == 302
    assert Transaction.objects.count() == 2 and CardAccount.objects.get().home_country == "NL"


def test_one_bad_line_imports_nothing_and_names_line_and_field(alice_client):
    bad = GOOD.replace("TX-1", "TX-2").replace(",pos,", ",teleport,").replace("12.50", "-1")
    response = upload(alice_client, HEADER + GOOD + bad)
    page = response.content.decode()
    assert response.status_code == 400
    assert "line 3: channel" in page and "line 3: amount" in page
    assert Transaction.objects.count() == 0


def test_a_new_card_needs_its_home_country_and_ids_are_unique(alice_client):
    header = HEADER.replace(",home_country", "")
    response = upload(alice_client, header + GOOD.replace(",NL\n", "\n"))
    assert response.status_code == 400 and "line 2: home_country" in response.content.decode()
    upload(alice_client, HEADER + GOOD)
    again = upload(alice_client, HEADER + GOOD)
    assert "line 2: transaction_id" in again.content.decode() and "already stored" in again.content.decode()


def test_the_command_imports_a_file(tmp_path):
    path = tmp_path / "history.csv"
    path.write_text(HEADER + GOOD)
    call_command("import_transactions", str(path))
    assert Transaction.objects.count() == 1
    path.write_text(HEADER.replace("mcc,", "") + GOOD)
    with pytest.raises(CommandError, match="missing column"):
        call_command("import_transactions", str(path))


def test_starting_an_unknown_transaction_from_the_page_says_so(alice_client):
    response = alice_client.post("/transactions/", {"transaction_id": "TX-NOPE"})
    assert response.status_code == 400 and "No transaction" in response.content.decode()
