"""Every declared lifecycle, walked generically: each state reachable, each type's states
mapped onto the shared case's, every move of a type's table one the case's table allows,
every status value the product shows (model choices, the database's check, badges, the
API's enum) a declared state; and the one transition service's refusals and audit."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.apps import apps
from django.conf import settings

from audit.models import AuditEntry
from casework.cases.lifecycle import AGENT, PERSON, SYSTEM, Lifecycle, State, lifecycle_get, lifecycles, move
from casework.cases.lifecycle.case import CASE_LIFECYCLE
from casework.cases.lifecycle.services import lifecycle_transition
from casework.cases.models import Case
from casework.cases.types import CASE_TYPES
from casework.errors import Conflict, DomainError

ALL = lifecycles()
IDS = [lc.key for lc in ALL]
# The case types' tables (the action's table, casework/cases/actions/states.py, never moves the case).
TYPED = [lc for lc in ALL if lc.key in CASE_TYPES]


def test_the_shared_case_and_each_registered_type_have_one_lifecycle():
    assert lifecycle_get("case") is CASE_LIFECYCLE
    for case_type in CASE_TYPES.values():
        if case_type.lifecycle is not None:
            assert lifecycle_get(case_type.key) is case_type.lifecycle
    assert "access_change" in IDS


@pytest.mark.parametrize("lifecycle", ALL, ids=IDS)
def test_every_state_is_reachable_and_only_end_states_are_dead_ends(lifecycle: Lifecycle):
    assert lifecycle.reachable() == {s.key for s in lifecycle.states}
    for state in lifecycle.states:
        assert bool(lifecycle.targets(state.key)) != state.final, state.key


@pytest.mark.parametrize("lifecycle", TYPED, ids=[lc.key for lc in TYPED])
def test_each_type_state_puts_the_case_in_a_declared_case_state(lifecycle: Lifecycle):
    for state in lifecycle.states:
        assert CASE_LIFECYCLE.has_state(state.case_status), (state.key, state.case_status)
        # Only a person resolves; a type's states say Closed only after a person's decision (below).
        assert state.case_status != "resolved", state.key


@pytest.mark.parametrize("lifecycle", TYPED, ids=[lc.key for lc in TYPED])
def test_a_type_enters_its_closed_states_only_by_a_persons_move(lifecycle: Lifecycle):
    """The states that say the case is Closed (a type's "decided", and what follows on a closed
    case, such as knowledge capture) are entered from an open state only by a person: agents and
    the system may move among them, never into them."""
    closed = {s.key for s in lifecycle.states if s.case_status == "closed"}
    for t in lifecycle.transitions:
        if t.target in closed and t.source not in closed:
            assert t.by == {PERSON}, f"{t.source} -> {t.target} closes the case, by {sorted(t.by)}"
    assert lifecycle.initial not in closed


@pytest.mark.parametrize("lifecycle", TYPED, ids=[lc.key for lc in TYPED])
def test_each_move_of_a_type_is_one_the_case_table_allows_for_the_same_actors(lifecycle: Lifecycle):
    """The case's status follows the type's through the case's own table: a type move whose
    queue move the case table refuses (or refuses to that kind of actor) would fail at run time."""
    for t in lifecycle.transitions:
        source, target = lifecycle.state(t.source).case_status, lifecycle.state(t.target).case_status
        if source == target:
            continue
        allowed = CASE_LIFECYCLE.move(source, target)
        assert allowed is not None, f"{t.source} -> {t.target} moves the case {source} -> {target}"
        assert t.by <= allowed.by, f"{t.source} -> {t.target}: {sorted(t.by - allowed.by)} may not move the case"


@pytest.fixture(scope="module")
def migrated_apps():
    """The models as the migration files build them: their choices are written out there, not
    read from the TextChoices that several lifecycles generate their states from."""
    from django.db.migrations.loader import MigrationLoader

    return MigrationLoader(None, ignore_no_migrations=True).project_state().apps


@pytest.mark.parametrize("lifecycle", ALL, ids=IDS)
def test_the_status_field_offers_exactly_the_declared_states(lifecycle: Lifecycle, migrated_apps):
    model = apps.get_model(lifecycle.record)
    field = model._meta.get_field(lifecycle.field)
    assert [key for key, _ in field.choices] == [s.key for s in lifecycle.states]
    assert dict(field.choices) == {s.key: s.label for s in lifecycle.states}
    assert field.default == lifecycle.initial
    # The database's column offers what the table declares: a state added to the code (its
    # TextChoices, which builds both the table and the field) without a migration fails here.
    migrated = migrated_apps.get_model(lifecycle.record)._meta.get_field(lifecycle.field)
    assert [(str(k), str(v)) for k, v in migrated.choices] == [(s.key, s.label) for s in lifecycle.states]
    assert migrated.default == lifecycle.initial


def test_the_database_check_and_the_badges_name_exactly_the_case_states():
    declared = {s.key for s in CASE_LIFECYCLE.states}
    check = next(c for c in Case._meta.constraints if c.name == "case_status_valid")
    assert set(dict(check.condition.children)["status__in"]) == declared
    css = (Path(settings.BASE_DIR) / "static" / "css" / "casework.css").read_text()
    assert set(re.findall(r"\.badge-status-(\w+)\s*\{", css)) == declared


def test_the_api_documents_exactly_the_case_states(api):
    schema = api.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    enums = [body["enum"] for name, body in schema["components"]["schemas"].items()
             if name.startswith("CaseStatus") or name == "StatusEnum" and "awaiting_decision" in body.get("enum", [])]
    assert enums and all(set(e) - {None, ""} == {s.key for s in CASE_LIFECYCLE.states} for e in enums)


# --- The transition service ---------------------------------------------------------------

TOY = Lifecycle(
    key="toy", label="Toy", record="cases.Case", field="status", initial="new", audit_action="toy.moved",
    states=(State("new", "New", "-"), State("in_progress", "In progress", "-"),
            State("closed", "Closed", "-", final=True)),
    transitions=tuple(move("new", "in_progress", AGENT, SYSTEM) + move("in_progress", "closed", PERSON)),
)


@pytest.fixture
def case(alice):
    from casework.cases.services import case_create

    return case_create(actor=alice, case_type="fraud_alert", title="A case")


@pytest.mark.django_db
def test_a_move_is_written_and_audited_with_who_and_why(case):
    lifecycle_transition(actor="agent:orchestrator", lifecycle=TOY, record=case, to="in_progress", reason="started")
    case.refresh_from_db()
    assert case.status == "in_progress"
    entry = AuditEntry.objects.filter(action="toy.moved").get()
    assert entry.actor == "agent:orchestrator" and entry.case_id == case.pk
    assert entry.data | {} == {**entry.data, "from": "new", "to": "in_progress", "by": "agent", "reason": "started",
                               "from_label": "New", "to_label": "In progress"}


@pytest.mark.django_db
def test_a_move_the_table_lacks_is_a_conflict_naming_both_states_and_changes_nothing(case):
    before = AuditEntry.objects.count()
    with pytest.raises(Conflict) as refused:
        lifecycle_transition(actor="system", lifecycle=TOY, record=case, to="closed")
    assert refused.value.status_code == 409 and refused.value.code == "transition_refused"
    assert refused.value.message == f"{case.reference} cannot go from New to Closed."
    case.refresh_from_db()
    assert case.status == "new" and AuditEntry.objects.count() == before


@pytest.mark.django_db(transaction=True)
def test_inside_a_callers_transaction_a_refusal_lets_it_go_on_and_no_savepoint_is_taken(case):
    from django.db import connection, transaction
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as captured, transaction.atomic():
        with pytest.raises(Conflict):
            lifecycle_transition(actor="system", lifecycle=TOY, record=case, to="closed")
        # The refusal came before any write: the caller's transaction goes on and commits.
        lifecycle_transition(actor="system", lifecycle=TOY, record=case, to="in_progress", reason="then this")
    assert not [q["sql"] for q in captured.captured_queries if "SAVEPOINT" in q["sql"].upper()]
    case.refresh_from_db()
    assert case.status == "in_progress"
    assert list(AuditEntry.objects.filter(action="toy.moved").values_list("data__to", flat=True)) == ["in_progress"]


@pytest.mark.django_db(transaction=True)
def test_a_write_failing_inside_a_move_rolls_back_to_the_callers_savepoint(case, monkeypatch):
    from django.db import DatabaseError, transaction

    from casework.cases.lifecycle import services

    def broken(*args, **kwargs):
        raise DatabaseError("the disk is full")

    with transaction.atomic():
        with pytest.raises(DatabaseError), transaction.atomic():  # the caller's savepoint
            monkeypatch.setattr(services, "row_update", broken)
            lifecycle_transition(actor="system", lifecycle=TOY, record=case, to="in_progress")
        monkeypatch.undo()
        # Rolled back to the savepoint: the transaction is usable and what follows commits.
        lifecycle_transition(actor="system", lifecycle=TOY, record=case, to="in_progress", reason="again")
    case.refresh_from_db()
    assert case.status == "in_progress"
    assert AuditEntry.objects.filter(action="toy.moved").count() == 1


@pytest.mark.django_db
def test_a_move_made_by_the_wrong_kind_of_actor_is_refused(case, alice):
    with pytest.raises(Conflict, match="only a agent or system makes that move") as refused:
        lifecycle_transition(actor=alice, lifecycle=TOY, record=case, to="in_progress")
    assert refused.value.code == "transition_not_allowed"
    lifecycle_transition(actor="system", lifecycle=TOY, record=case, to="in_progress")
    with pytest.raises(Conflict, match="on the word of an agent: only a person"):
        lifecycle_transition(actor="agent:closer", lifecycle=TOY, record=case, to="closed")


@pytest.mark.django_db
def test_an_undeclared_state_is_refused(case):
    with pytest.raises(DomainError, match="'teleported' is not a state of Toy"):
        lifecycle_transition(actor="system", lifecycle=TOY, record=case, to="teleported")


@pytest.mark.django_db
def test_the_case_table_refuses_an_agent_resolving_or_a_case_going_back_to_new(case):
    from casework.cases.services import case_set_status

    case_set_status(actor="agent:orchestrator", case=case, status="awaiting_decision")
    with pytest.raises(Conflict, match="cannot go from Awaiting decision to New"):
        case_set_status(actor="system", case=case, status="new")


def test_a_table_that_names_an_undeclared_state_or_leaves_an_end_state_is_refused_at_declaration():
    with pytest.raises(ValueError, match="undeclared state"):
        Lifecycle(key="bad", label="Bad", record="cases.Case", field="status", initial="a", audit_action="x",
                  states=(State("a", "A", "-"),), transitions=tuple(move("a", "b", SYSTEM)))
    with pytest.raises(ValueError, match="is final"):
        Lifecycle(key="bad", label="Bad", record="cases.Case", field="status", initial="a", audit_action="x",
                  states=(State("a", "A", "-", final=True), State("b", "B", "-")),
                  transitions=tuple(move("a", "b", SYSTEM)))


# --- The page -----------------------------------------------------------------------------

@pytest.mark.django_db
def test_the_page_draws_every_lifecycle_from_its_table(alice_client):
    page = alice_client.get("/lifecycles/").content.decode()
    for lifecycle in ALL:
        section = page[page.index(f'id="lifecycle-{lifecycle.key}"'):]
        svg = section[:section.index("</svg>")]
        assert svg.count("<rect") == len(lifecycle.states)
        assert svg.count('class="lifecycle-move') == len(lifecycle.transitions)
        for state in lifecycle.states:
            assert f'id="state-{lifecycle.key}-{state.key}"' in section
    assert "No move reaches" not in page


@pytest.mark.django_db
def test_the_page_needs_a_login(client):
    assert client.get("/lifecycles/").status_code == 302



@pytest.mark.django_db
def test_a_type_move_that_brings_the_case_along_locks_both_rows_at_once_and_audits_in_one_insert():
    """A fraud alert received -> assessing puts its case in progress: one SELECT locks the
    alert and its case, one UPDATE each, one INSERT of both audit entries (was 2 SELECTs and
    2 INSERTs: the case was locked again to move it)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from casework.fraud.services import alert_create
    from casework.fraud.states import FRAUD_LIFECYCLE
    from tests.fraud.conftest import CLEAN

    alert = alert_create(actor="system", data=CLEAN)
    with CaptureQueriesContext(connection) as queries:
        lifecycle_transition(actor="system", lifecycle=FRAUD_LIFECYCLE, record=alert, to="assessing", reason="go")
    sql = [q["sql"] for q in queries.captured_queries
           if not q["sql"].upper().startswith(("SAVEPOINT", "RELEASE SAVEPOINT", "BEGIN", "COMMIT"))]
    assert [s.split()[0] for s in sql] == ["SELECT", "UPDATE", "UPDATE", "INSERT"], sql
    if connection.vendor == "postgresql":
        assert 'FOR UPDATE OF "fraud_alert", "cases_case"' in sql[0]
    alert.case.refresh_from_db()
    assert alert.case.status == "in_progress"
    entries = AuditEntry.objects.filter(case_id=alert.case_id, action__in=("fraud.status_changed",
                                                                           "case.status_changed"))
    assert [(e.action, e.data["to"]) for e in entries.order_by("id")][-2:] == [
        ("fraud.status_changed", "assessing"), ("case.status_changed", "in_progress")]
