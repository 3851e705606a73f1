"""Each type's records yield entities when its case is made; the values are normalised, an
email hashed, a card reduced to BIN and last four; a second extraction adds nothing."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command

from casework.cases.types import Found
from casework.entities.extraction import _one_text, entities_extract, entities_record
from casework.entities.kinds import normalise
from casework.entities.models import Entity, Mention
from tests.entities.conftest import ACCOUNT, IP

pytestmark = pytest.mark.django_db


def named(case) -> set[tuple[str, str]]:
    return {(m.entity.kind, m.entity.display) for m in Mention.objects.filter(case=case).select_related("entity")}


def test_a_fraud_alert_names_its_account_device_and_ip(alert):
    case = alert().case
    assert named(case) == {("account", ACCOUNT), ("device", "DEV-RING-A1"), ("ip", IP)}
    mention = Mention.objects.get(case=case, entity__kind="account")
    assert mention.source_field == "account_id"


def test_a_ticket_names_its_customer_its_hashed_email_and_what_the_customer_wrote(ticket):
    case = ticket().case
    assert named(case) == {("customer", "CUST-9001"), ("email", "d***@example.com"), ("account", ACCOUNT),
                           ("ip", IP)}
    email = Entity.objects.get(kind="email")
    assert email.value.startswith("sha256:") and "dana" not in email.value.lower()


def test_an_investigation_names_account_card_merchant_and_device(investigation):
    case = investigation().case
    assert named(case) == {("account", ACCOUNT), ("card", f"…4242 on {ACCOUNT}"), ("merchant", "Quick Cash Ltd"),
                           ("device", "DEV-RING-A1")}


def test_the_same_thing_in_three_types_is_one_entity(alert, ticket, investigation):
    cases = [alert().case, ticket().case, investigation().case]
    account = Entity.objects.get(kind="account", value=ACCOUNT)
    assert set(account.mentions.values_list("case_id", flat=True)) == {c.pk for c in cases}


def test_extracting_again_adds_nothing_and_the_backfill_is_idempotent(alert, ticket):
    case = alert().case
    ticket()
    # The alert names account, device and ip; the ticket customer, email, the same account and ip.
    expected = {("account", ACCOUNT), ("device", "DEV-RING-A1"), ("ip", IP), ("customer", "CUST-9001"),
                ("email", "d***@example.com")}

    def counts() -> tuple[int, int]:
        return Entity.objects.count(), Mention.objects.count()

    assert counts() == (5, 7)
    entities_extract(case=case)
    assert counts() == (5, 7)  # extracting the alert's case again adds nothing
    assert named(case) == {("account", ACCOUNT), ("device", "DEV-RING-A1"), ("ip", IP)}

    # The backfill rebuilds lost mentions, once, however often it runs.
    Mention.objects.all().delete()
    call_command("backfill_entities", "--batch", "1", stdout=open("/dev/null", "w"))
    assert counts() == (5, 7)
    call_command("backfill_entities", stdout=open("/dev/null", "w"))
    assert counts() == (5, 7)
    assert {(e.kind, e.display) for e in Entity.objects.all()} == expected


@pytest.mark.parametrize("raw,value,display", [
    ("4111 1111 1111 1111", "411111******1111", "411111…1111"),
    ("411111******1111", "411111******1111", "411111…1111"),
    ("ACC-1/4242", "ACC-1/****4242", "…4242 on ACC-1"),
])
def test_a_card_keeps_only_its_bin_and_last_four(raw, value, display):
    assert normalise("card", raw) == (value, display)


@pytest.mark.parametrize("kind,raw,field", [("card", "12", "value"), ("ip", "999.1.1.1", "value"),
                                            ("email", "nobody", "value"), ("planet", "x", "kind")])
def test_a_bad_value_is_refused_naming_the_field(kind, raw, field):
    with pytest.raises(ValidationError) as exc:
        normalise(kind, raw)
    assert field in exc.value.message_dict


def test_the_same_email_written_two_ways_is_one_hash():
    assert normalise("email", " Dana.Doe@Example.com")[0] == normalise("email", "dana.doe@example.com")[0]


# Recording: the entities' insert and the mentions' insert (their ids looked up in the same
# statement). On PostgreSQL one round trip: one text with client-side binding (one query
# logged), two statements in psycopg's pipeline with server-side binding (two logged); SQLite
# takes one statement a call.
RECORDING = 1 if _one_text() else 2


def test_extraction_costs_one_round_trip_beyond_reading_the_record(alert, django_assert_num_queries):
    case = alert().case
    from casework.cases.models import Case

    case = Case.objects.select_related("fraud_alert__account").get(pk=case.pk)
    # One read of the account's links, then the recording; no savepoint inside the caller's
    # transaction.
    with django_assert_num_queries(1 + RECORDING):
        assert entities_extract(case=case) == 3


def test_recording_twenty_entities_costs_what_recording_one_does(alert, django_assert_num_queries):
    case = alert().case
    with django_assert_num_queries(RECORDING):
        assert entities_record(case=case, found=[Found("device", "DEV-ONE", "device_ids")]) == 1
    many = [Found("device", f"DEV-{n}", "device_ids") for n in range(10)]
    many += [Found("ip", f"198.51.100.{n}", "ip_addresses") for n in range(10)]
    with django_assert_num_queries(RECORDING):
        assert entities_record(case=case, found=many + [Found("device", "DEV-ONE", "device_ids")]) == 21
    assert Mention.objects.filter(case=case).count() == 3 + 21
    assert set(Mention.objects.filter(case=case, entity__kind="ip").values_list("entity__value", flat=True)) >= {
        f"198.51.100.{n}" for n in range(10)}


def test_a_mention_keeps_its_first_source_and_an_agent_finding_is_recorded(alert, monkeypatch):
    case = alert().case
    at = datetime(2026, 3, 4, 5, 6, 7, 891011, tzinfo=UTC)
    monkeypatch.setattr("django.utils.timezone.now", lambda: at)
    entities_record(case=case, found=[Found("device", "DEV-RING-A1", "elsewhere")], source_agent="network")
    entities_record(case=case, found=[Found("phone", "+31 6 1234 5678", "summary")], source_agent="network",
                    source_tool="lookup")
    kept = Mention.objects.get(case=case, entity__kind="device")
    assert (kept.source_field, kept.source_agent) == ("device_ids", "")
    phone = Mention.objects.select_related("entity").get(case=case, entity__kind="phone")
    assert (phone.source_field, phone.source_agent, phone.source_tool) == ("summary", "network", "lookup")
    assert phone.created_at == at  # written by SQL, read back as the same aware time


def test_recording_nothing_costs_nothing(alert, django_assert_num_queries):
    case = alert().case
    with django_assert_num_queries(0):
        assert entities_record(case=case, found=[Found("ip", "999.1.1.1", "ip_addresses")]) == 0
