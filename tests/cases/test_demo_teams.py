"""The demo's teams: each person sees their team's case types, and the start-up message says so."""

from __future__ import annotations

import pytest

from casework.cases.demo import demo_people
from casework.cases.teams_selectors import person_access_line
from casework.cases.types import CASE_TYPES
from casework.cases.visibility import case_type_visible

pytestmark = pytest.mark.django_db


def test_each_demo_person_sees_their_teams_types_and_the_admin_all():
    people = demo_people()

    def sees(name):
        return {t for t in CASE_TYPES if case_type_visible(people[name], t)}

    assert sees("alice") == sees("leo") == {"fraud_alert", "transaction_investigation"}
    assert sees("ivan") == {"support_ticket"}
    assert sees("irene") == sees("mona") == {"access_change"}
    assert sees("rita") == {"release_risk"}
    assert sees("admin") == set(CASE_TYPES)
    assert sees("mark") == set()
    assert demo_people().keys() == people.keys()  # idempotent


def test_the_start_up_lines_say_who_sees_what():
    people = demo_people()

    lines = {name: person_access_line(user) for name, user in people.items()}

    assert lines["alice"] == "Fraud and transactions (member): Fraud alert, Transaction investigation"
    assert lines["leo"] == "Fraud and transactions (lead): Fraud alert, Transaction investigation"
    assert lines["ivan"] == "Support desk (lead): Support ticket"
    assert lines["admin"] == "every case (admin)"
    assert lines["mona"] == "in IAM (member): Access change, opens no case pages (answers only the requests addressed to them)"
    assert lines["mark"] == "opens no case pages (answers only the requests addressed to them)"
