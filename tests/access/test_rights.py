"""check_authorization's logic: direct and role authorisations, validity dates, revocation,
employment dates and level ordering, with the evidence rows that explain the answer."""

from __future__ import annotations

from datetime import date

import pytest

from casework.access.models import DirectAuthorisation
from casework.access.rights import RegistryUnavailable, rights_evaluate

pytestmark = pytest.mark.django_db


def check(org, employee, level, day, system=None):
    return rights_evaluate(employee=employee, system=system or org.finance, level=level, on_date=day)


def covering(result):
    return [row.reference for row in result.evidence if row.covers]


def test_a_direct_authorisation_at_a_higher_level_covers_a_lower_one(org):
    result = check(org, org.priya, org.read, date(2025, 11, 10))
    assert result.authorized
    assert covering(result) == ["A1", "R-FA"]  # Write covers Read; so does her role's Read
    assert result.held_level == "Write"


def test_a_level_below_the_required_one_does_not_cover(org):
    result = check(org, org.priya, org.admin, date(2025, 11, 10))
    assert not result.authorized
    notes = {row.reference: row.note for row in result.evidence}
    assert notes["A1"] == "Write is below the required Admin"
    assert notes["A2"] == "ended on 2024-12-31"
    assert notes["R-FA"] == "Read is below the required Admin"


def test_a_revoked_grant_covers_the_days_before_its_end(org):
    result = check(org, org.priya, org.admin, date(2024, 6, 3))
    assert result.authorized and covering(result) == ["A2"]


def test_a_revoked_grant_without_an_end_date_covers_no_day(org):
    DirectAuthorisation.objects.filter(authorisation_id="A2").update(valid_to=None)
    result = check(org, org.priya, org.admin, date(2024, 6, 3))
    assert not result.authorized
    assert "revoked" in {row.reference: row.note for row in result.evidence}["A2"]


def test_a_grant_is_not_valid_before_it_starts(org):
    result = check(org, org.priya, org.write, date(2023, 12, 31))
    assert "A1" not in covering(result)
    assert {row.reference: row.note for row in result.evidence}["A1"] == "not yet valid on 2023-12-31"


def test_role_rights_count_and_are_named(org):
    result = check(org, org.kees, org.admin, date(2025, 11, 10))
    assert result.authorized and covering(result) == ["R-FD"]
    assert "Finance Admin" in next(r.note for r in result.evidence if r.covers)


def test_nobody_is_authorised_on_a_day_they_were_not_employed(org):
    org.kees.termination_date = date(2025, 6, 30)
    org.kees.save()
    result = check(org, org.kees, org.admin, date(2025, 11, 10))
    assert not result.authorized
    assert result.evidence[0].source == "employment"
    assert "not employed" in result.evidence[0].note


def test_rights_on_another_system_do_not_count(org):
    result = check(org, org.sara, org.read, date(2025, 11, 10))
    assert not result.authorized
    assert {row.reference: row.note for row in result.evidence}["A3"] == "another system"


def test_an_unavailable_registry_cannot_be_checked(org):
    with pytest.raises(RegistryUnavailable, match="Payroll"):
        check(org, org.kees, org.write, date(2025, 11, 10), system=org.payroll)
