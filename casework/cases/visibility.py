"""Who sees which case: the one rule (need-to-know).

A person sees a case when a team they are in owns its type (casework.people.models.Team), unless
a lead restricted the case to named people: then only those people see it. Admins see every
case. `cases_visible_to` is the rule as a queryset filter, for every listing, count, search and
export; `case_visible` is the same rule for one case already in hand. Every path that shows a
case, a count of cases or something only cases name goes through one of them, and a case
outside the rule is answered as if it did not exist (404), so its reference does not leak.

Agents working a case read what their pipeline needs (they act for the case, not for a person);
what they show a person (a chat answer, similar cases) is filtered by that person's rule.
"""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db.models import Q, QuerySet

from casework.cases.models import Case, CaseRestriction
from casework.cases.navigation import nav_get, nav_read_register, nav_watch
from casework.people.models import Team, TeamMembership
from casework.people.roles import ADMIN, user_roles


def _memberships_read(user) -> tuple[tuple[str, tuple[str, ...]], ...]:
    rows = TeamMembership.objects.filter(user_id=user.pk).values_list("role", "team__case_types")
    return tuple((role, tuple(types or ())) for role, types in rows)


def _memberships(user) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """(role, case types) per team of this person: from the navigation's cache, which every
    change of a team or a membership invalidates (casework.cases.navigation), once per user
    object (a request's; people.teams forgets it when it changes their memberships)."""
    cached = getattr(user, "_casework_teams", None)
    if cached is None:
        cached = user._casework_teams = nav_get(user, "case_teams")
    return cached


def _named_case_ids_read(user) -> list[int]:
    return sorted(CaseRestriction.objects.filter(user_id=user.pk).values_list("case_id", flat=True))


def _named_case_ids(user) -> list[int]:
    """The restricted cases this person is named on: from the navigation's cache, which every
    change of a restriction invalidates (nav_watch below; casework/cases/restriction.py)."""
    cached = getattr(user, "_casework_named", None)
    if cached is None:
        cached = user._casework_named = nav_get(user, "named_cases")
    return cached


def sees_every_case(user) -> bool:
    return ADMIN in user_roles(user)


def user_case_types(user) -> frozenset[str]:
    """The case types this person's teams own (admins: see `sees_every_case`)."""
    if not getattr(user, "is_authenticated", False) or not user.is_active:
        return frozenset()
    return frozenset(t for _role, types in _memberships(user) for t in types)


def user_lead_case_types(user) -> frozenset[str]:
    """The case types of the teams this person leads."""
    if not getattr(user, "is_authenticated", False) or not user.is_active:
        return frozenset()
    return frozenset(t for role, types in _memberships(user) if role == "lead" for t in types)


def visible_q(user, prefix: str = "") -> Q:
    """The rule as a filter on cases (or, with `prefix` "case__", on rows that point at one)."""
    if not getattr(user, "is_authenticated", False) or not user.is_active:
        return Q(pk__in=[])
    if sees_every_case(user):
        return Q()
    teams = Q(**{f"{prefix}case_type__in": sorted(user_case_types(user)), f"{prefix}restricted": False})
    named = _named_case_ids(user)
    # Most people are named on no restricted case: then no OR, which would keep PostgreSQL from
    # answering the queue's capped count from the (case_type, ...) indexes (bench/queue_100k.py).
    return teams | Q(**{f"{prefix}pk__in": named}) if named else teams


def cases_visible_to(user, queryset: QuerySet | None = None) -> QuerySet:
    """The cases this person may see (of `queryset`, or all)."""
    queryset = Case.objects.all() if queryset is None else queryset
    return queryset.filter(visible_q(user))


def case_visible(user, case: Case) -> bool:
    """Whether this person may see this case: the rule of `cases_visible_to`, for one case."""
    if not getattr(user, "is_authenticated", False) or not user.is_active:
        return False
    if sees_every_case(user):
        return True
    if case.restricted:
        return case.pk in _named_case_ids(user)
    return case.case_type in user_case_types(user)


def references_visible(user, references) -> set[str]:
    """Of these case references (upper case), those this person may see: one query, for a list
    something else made (a run's look-alikes, a tool's answer) filtered before it is shown."""
    wanted = {str(r).upper() for r in references if r}
    if not wanted:
        return set()
    return set(cases_visible_to(user, Case.objects.filter(reference__in=sorted(wanted)))
               .values_list("reference", flat=True))


# Sources of the cases a person is addressed about without seeing them (a case type registers
# one: a manager asked to validate an access change): source(user) -> a queryset of case ids.
# Such a person may read the case's reference where it addresses them; nothing more.
ADDRESSED: list = []


def addressed_register(source) -> None:
    ADDRESSED.append(source)


def references_addressed(user, references) -> set[str]:
    """Of these references, those of cases this person is addressed about (ADDRESSED)."""
    wanted = sorted({str(r).upper() for r in references if r})
    if not wanted or not ADDRESSED or not getattr(user, "is_authenticated", False):
        return set()
    found: set[str] = set()
    for source in ADDRESSED:
        found |= set(Case.objects.filter(reference__in=wanted, pk__in=source(user)).values_list("reference", flat=True))
    return found


def case_type_visible(user, case_type: str) -> bool:
    """Whether this person sees (unrestricted) cases of this type: lists, counts, filters."""
    return sees_every_case(user) or case_type in user_case_types(user)


def case_types_visible(user, case_types) -> list[str]:
    """Of `case_types`, those this person sees, in the given order."""
    return [t for t in case_types if case_type_visible(user, t)]


def user_leads(user, case: Case) -> bool:
    """Whether this person leads a team that owns this case's type (or is an admin): they may
    restrict it and see who looked at it."""
    if sees_every_case(user):
        return True
    return case_visible(user, case) and case.case_type in user_lead_case_types(user)


def user_in_owning_team(user, case_type: str) -> bool:
    """Whether a team this person is in owns this case type: who sees its special-category
    fields unmasked (an absence's kind and dates, full e-mail addresses, card numbers).
    Admins outside the team see them masked."""
    return case_type in user_case_types(user)


def people_who_may_see(case: Case) -> QuerySet[User]:
    """Active people this case may be shown to: its team's members (or, restricted, the named
    people), and admins. Assignment, escalation and notifications stay inside it."""
    admins = Q(is_superuser=True) | Q(groups__name=ADMIN)
    if case.restricted:
        scope = Q(pk__in=CaseRestriction.objects.filter(case_id=case.pk).values("user_id"))
    else:
        scope = Q(pk__in=people_seeing_types([case.case_type]))
    return User.objects.filter(is_active=True).filter(scope | admins).distinct()


def people_seeing_types(case_types) -> list[int]:
    """Ids of the members of the teams owning any of these types (teams are few: their type
    lists are read here, not matched in SQL, which SQLite's JSON cannot do for a list)."""
    wanted = set(case_types)
    teams = [t.pk for t in Team.objects.only("pk", "case_types") if wanted & set(t.case_types or ())]
    return list(TeamMembership.objects.filter(team_id__in=teams).values_list("user_id", flat=True).distinct())


def _assignable(user) -> list[str]:
    """Whom this person may assign cases to: investigators in a team that sees a type they see
    (admins: every investigator). Each assignment is checked against its own case too."""
    from casework.people.roles import investigators

    people = investigators()
    if not sees_every_case(user):
        people = people.filter(pk__in=people_seeing_types(user_case_types(user)))
    return list(people.values_list("username", flat=True))


nav_read_register("case_teams", _memberships_read)
nav_read_register("named_cases", _named_case_ids_read)
nav_watch(CaseRestriction, uid="case_restriction", person="user_id")
nav_read_register("investigators", _assignable)
