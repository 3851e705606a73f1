"""The ticket matcher is shown at most SUPPORT_MATCH_MAX_TICKETS of a customer's active tickets,
the most recently active first, read in one query whatever the backlog."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from casework.support.models import Ticket
from casework.support.selectors import active_ticket_ids
from casework.support.services import ticket_open

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)


def _backlog(customer, count: int) -> list[str]:
    """`count` open tickets; ticket i last moved at T0 + i hours, except that the oldest
    ticket had a follow-up last of all."""
    ids = []
    for i in range(count):
        ticket = ticket_open(actor="system", customer=customer, message=f"Problem number {i}.")
        Ticket.objects.filter(pk=ticket.pk).update(updated_at=T0 + timedelta(hours=i))
        ids.append(ticket.ticket_id)
    Ticket.objects.filter(ticket_id=ids[0]).update(updated_at=T0 + timedelta(hours=count))
    return ids


def test_the_cap_keeps_the_most_recently_active_first(settings, support_data):
    customer = next(iter(support_data.values()))
    ids = _backlog(customer, 6)
    settings.SUPPORT_MATCH_MAX_TICKETS = 3
    assert active_ticket_ids(customer.customer_id) == [ids[0], ids[5], ids[4]]
    assert active_ticket_ids(customer.customer_id, limit=10) == [ids[0], *reversed(ids[1:])]


@pytest.mark.parametrize("backlog", [2, 25])
def test_the_candidates_cost_one_query_at_any_backlog(backlog, settings, support_data,
                                                      django_assert_num_queries):
    settings.SUPPORT_MATCH_MAX_TICKETS = 20
    customer = next(iter(support_data.values()))
    _backlog(customer, backlog)
    with django_assert_num_queries(1):
        found = active_ticket_ids(customer.customer_id)
    assert len(found) == min(backlog, 20)
