"""The API against its own OpenAPI schema (schemathesis), on a live server with the demo data.

Every operation gets up to EXAMPLES generated requests (derandomized: the same requests on
every run), sent with an investigator's token, and each response is checked: no 5xx, a
documented status, a documented content type, a body that matches the schema, and (the
ignored_auth check) an authenticated operation that refuses the same request without the
token. All failures are collected and reported together, operation by operation.

Generated path parameters almost never name an object that exists, so on their own they test
each one-object operation only for its 404: a closed case, a done task or a recommendation
nobody has decided yet would never be read or acted on. So every operation with path
parameters is also sent to real objects in each state the API answers differently
(`_seeded_objects`): its documented example bodies, then SEEDED_EXAMPLES generated requests.
The run must reach the answers in MUST_ANSWER and a 200 from every GET, and every operation
with path parameters must have seeded objects: a state the requests stop reaching fails here
instead of hiding a hole.

Generated bodies are mostly objects of the documented shape; a body of the wrong shape
altogether (a JSON array where an object is documented, a null, a bare string) was never
sent, and `PUT /api/transactions/rates/` answered a 500 to one. So every write operation
(each POST, PUT and PATCH of the schema) is also sent a handful of fixed malformed bodies
(MALFORMED), through Django's test client, by an admin in every team (so that no role check
answers before the body is read), on a real object: each must be answered 4xx, and an
operation that documents no body may ignore it, but none may answer 5xx (`_malformed_sweep`,
a plain loop: 174 requests, 1.6 s on SQLite and 3.4 s on PostgreSQL here)."""

from __future__ import annotations

import re
from collections import defaultdict

import pytest
import requests
import schemathesis
from django.contrib.auth.models import User
from drf_spectacular.generators import SchemaGenerator
from hypothesis import HealthCheck, Phase, given
from hypothesis import settings as hypothesis_settings
from schemathesis import checks as st_checks
from schemathesis.specs.openapi import checks as openapi_checks

from agents.models import AgentRun, RunPause
from casework.access.models import HRMutation, InfoRequest
from casework.cases.attachments.models import Attachment
from casework.cases.models import Case
from casework.cases.saved_views.services import saved_view_create
from casework.cases.services import case_close
from casework.cases.tasks.models import Task
from casework.cases.tasks.services import task_add_from_template
from casework.entities.models import Entity
from casework.outbox.models import Action, Delivery, Endpoint, OutboxEvent
from casework.people.roles import INVESTIGATOR
from casework.people.services import user_create
from casework.releases.models import Release
from casework.security.tokens import api_token_create
from casework.support.models import Ticket
from casework.transactions.models import Investigation, Recommendation
from tests.conftest import in_every_team
from tests.demo_snapshot import demo_loaded

pytestmark = pytest.mark.django_db(transaction=True)

EXAMPLES = 8  # per operation: about 50 operations x 8 requests, well inside the suite's budget
# Per operation and real object: the first request meets the seeded state, the second the state
# it left (a task marked done is done for the next request: 200, then 409). A GET changes
# nothing, so one is enough (the case report's PDF takes about 2 s to render).
SEEDED_EXAMPLES = {"get": 1, "other": 2}
CHECKS = [
    st_checks.not_a_server_error,
    openapi_checks.status_code_conformance,
    openapi_checks.content_type_conformance,
    openapi_checks.response_schema_conformance,
    openapi_checks.ignored_auth,
]
# Answers the seeded requests must have met: the states a generated request does not reach.
MUST_ANSWER = {
    "POST /api/cases/{reference}/tasks/from-template/": {201, 409},  # an open case, a closed one
    "POST /api/cases/{reference}/tasks/{id}/done/": {200, 409},  # an open task, a done one
    "POST /api/cases/{reference}/tasks/{id}/reopen/": {200, 409},  # a done task, an open one
    "POST /api/cases/{reference}/tasks/{id}/assign/": {409},  # a closed case's task
    "POST /api/cases/{reference}/close/": {409},  # a closed case
    "GET /api/cases/{reference}/attachments/{id}/download/": {200},
}
# The GETs an investigator may not read (the managers' inbox, the admins' webhook endpoints,
# the data-protection officers' erasure requests):
# their 200 is not reached here.
GET_NOT_FOR_INVESTIGATORS = {"GET /api/access/inbox/", "GET /api/webhooks/endpoints/",
                             "GET /api/webhooks/endpoints/{id}/", "GET /api/webhooks/endpoints/{id}/deliveries/",
                             "GET /api/erasure-requests/{id}/"}


@pytest.mark.long(seconds=110)
def test_every_operation_keeps_its_contract(live_server):
    demo_loaded()
    # In a team owning every case type: the contract is checked on cases the caller may see
    # (the need-to-know answers are tests/security/test_need_to_know_matrix.py's).
    user = in_every_team(user_create(actor="system", username="fuzz", password="fuzz-pass-123", role=INVESTIGATOR))
    _, secret = api_token_create(actor="system", user=user, name="schemathesis")
    seeded = _seeded_objects(user)
    raw = SchemaGenerator().get_schema(request=None, public=True)
    schema = schemathesis.openapi.from_dict(raw)
    session = requests.Session()
    headers = {"Authorization": f"Token {secret}"}
    failures: list[str] = []
    unseeded: list[str] = []
    answered: dict[str, set[int]] = defaultdict(set)

    def record_status(ctx, response, case):
        answered[case.operation.label].add(response.status_code)

    checks = [*CHECKS, record_status]

    def run_examples(operation, strategy, max_examples: int, label: str) -> None:
        @given(case=strategy)
        @hypothesis_settings(max_examples=max_examples, deadline=None, derandomize=True, database=None,
                             phases=[Phase.explicit, Phase.generate],
                             suppress_health_check=list(HealthCheck))
        def run(case):
            case.call_and_validate(base_url=live_server.url, session=session, headers=headers, checks=checks,
                                   timeout=30)

        try:
            run()
        except (Exception, BaseExceptionGroup) as exc:  # noqa: BLE001 - collect every operation's failure
            failures.append(f"{label}: {_summary(exc)}")

    operations = [result.ok() for result in schema.get_all_operations()]
    for operation in operations:
        run_examples(operation, operation.as_strategy(), EXAMPLES, operation.label)
        names = set(re.findall(r"{(\w+)}", operation.path))
        if not names:
            continue
        objects = _objects_for(operation.path, names, seeded)
        if not objects:
            unseeded.append(operation.label)
        bodies = _documented_bodies(raw, operation)
        for parameters in objects:
            label = f"{operation.label} {parameters}"
            # The documented example bodies first (a real assignee, a real outcome): they reach
            # what a generated body's 400 stops short of.
            for body in bodies:
                run_examples(operation, operation.as_strategy(path_parameters=parameters, body=body,
                                                              media_type="application/json"), 1, label)
            run_examples(operation, operation.as_strategy(path_parameters=parameters),
                         SEEDED_EXAMPLES["get" if operation.method.lower() == "get" else "other"], label)

    assert len(operations) >= 45
    failures += _malformed_sweep(raw, seeded)
    assert not failures, "\n\n".join(failures)
    assert not unseeded, f"no real object seeded for: {unseeded}"
    missed = {label: sorted(statuses - answered[label]) for label, statuses in MUST_ANSWER.items()
              if statuses - answered[label]}
    assert not missed, f"seeded requests did not reach these answers: {missed}"
    unread = [op.label for op in operations if op.method.upper() == "GET" and 200 not in answered[op.label]]
    assert sorted(unread) == sorted(GET_NOT_FOR_INVESTIGATORS), f"GETs that never answered 200: {unread}"


# Bodies of the wrong shape: every write operation answers each with a 4xx naming the problem.
# "wrong types" fills every documented property with a value of another type.
MALFORMED = {"an array": b'[{"a": 1}]', "null": b"null", "a string": b'"text"', "broken JSON": b'{"a": '}
WRONG_TYPE = {"string": [{"a": 1}], "integer": "not a number", "number": "not a number", "boolean": {"a": []},
              "array": {"a": "b"}, "object": [1, 2]}


def _malformed_sweep(raw: dict, seeded: dict[str, list[dict]]) -> list[str]:
    """Each write operation, on the first seeded object (or made-up path parameters), with each
    malformed body: a 5xx, or a 2xx to an operation that documents a body, is a failure."""
    from django.test import Client

    from casework.people.roles import ADMIN

    admin = in_every_team(user_create(actor="system", username="sweep", password="sweep-pass-123", role=ADMIN))
    _, secret = api_token_create(actor="system", user=admin, name="malformed sweep")
    client = Client(raise_request_exception=False, HTTP_AUTHORIZATION=f"Token {secret}")
    failures = []
    for path, operations in raw["paths"].items():
        for method, operation in operations.items():
            if method not in ("post", "put", "patch"):
                continue
            names = set(re.findall(r"{(\w+)}", path))
            objects = _objects_for(path, names, seeded) if names else [{}]
            parameters = objects[0] if objects else dict.fromkeys(names, "1")
            url = path.format(**parameters)
            content = operation.get("requestBody", {}).get("content", {})
            documented = "application/json" in content
            if documented:
                bodies = {**MALFORMED, "wrong types": _wrong_types(raw, content["application/json"].get("schema", {}))}
            else:
                # It reads no body, so one is enough to show that it ignores it (each request does the
                # operation's work: a re-run, a replay).
                bodies = {"an array": MALFORMED["an array"]}
            for what, body in bodies.items():
                response = getattr(client, method)(url, body, content_type="application/json")
                status = response.status_code
                if status >= 500 or (documented and status < 400):
                    error = getattr(response, "exc_info", None)
                    failures.append(f"{method.upper()} {path} with {what}: {status}"
                                    + (f" ({error[0].__name__}: {error[1]})" if error else ""))
    return failures


def _wrong_types(raw: dict, schema: dict) -> bytes:
    """A JSON object with every documented property set to a value of another type."""
    import json

    if "$ref" in schema:
        schema = raw["components"]["schemas"][schema["$ref"].rsplit("/", 1)[-1]]
    body = {name: WRONG_TYPE.get(prop.get("type"), [[]]) for name, prop in schema.get("properties", {}).items()}
    return json.dumps(body or {"unexpected": [[]]}).encode()


def _documented_bodies(raw: dict, operation) -> list:
    """The operation's documented JSON request examples (drf-spectacular's OpenApiExample)."""
    body = raw["paths"][operation.path][operation.method.lower()].get("requestBody", {})
    return [example["value"] for example in
            body.get("content", {}).get("application/json", {}).get("examples", {}).values()]


def _objects_for(path: str, names: set[str], seeded: dict[str, list[dict]]) -> list[dict]:
    """The seeded objects for an operation: those of the longest seeded path that starts its
    path and has the same parameters (`/api/cases/{reference}/` fills `.../tasks/from-template/`)."""
    keys = [key for key in seeded if path.startswith(key) and set(re.findall(r"{(\w+)}", key)) == names]
    return seeded[max(keys, key=len)] if keys else []


def _dpo() -> User:
    from casework.people.roles import DATA_PROTECTION

    return user_create(actor="system", username="dora", password="dora-pass-123", role=DATA_PROTECTION)


def _seeded_objects(user: User) -> dict[str, list[dict]]:
    """Path parameters of real objects, by the path they fill: an open case and a closed one,
    an open task, a done one and a closed case's, and of every other kind one object in each
    state the demo data has (a ticket per case status, an investigation per status, a
    recommendation decided and one nobody has decided ...). Each mutating operation changes
    its object, so the case, checklist, task and fraud alert groups use different cases."""
    alice = User.objects.get(username="alice")
    done = Task.objects.filter(done=True).exclude(case__status=Case.Status.CLOSED).select_related("case").first()
    open_task = Task.objects.filter(case=done.case, done=False).first()
    fraud = (Case.objects.filter(case_type="fraud_alert").exclude(status=Case.Status.CLOSED)
             .filter(tasks__isnull=True, attachments__isnull=True).order_by("id"))
    open_case, checklist_case, open_alert, closed = fraud[0], fraud[1], fraud[2], fraud[3]
    closed_task = task_add_from_template(actor=alice, case=closed)[0]
    case_close(actor=alice, case=closed, outcome="legit", reason="Seeded for the contract test.")
    closed_alert = Case.objects.filter(case_type="fraud_alert", status=Case.Status.CLOSED).exclude(pk=closed.pk).first()
    view = saved_view_create(actor=user, name="Fuzz's new cases", query="status=new")
    # Written directly: the endpoint service resolves the URL's host, and this run has no DNS.
    endpoint = Endpoint.objects.create(url="https://hooks.example.com/casework", enabled=False)
    delivery = Delivery.objects.create(endpoint=endpoint, event=OutboxEvent.objects.create(
        type="case.created", payload={}), state=Delivery.State.DEAD)
    manager_requests = InfoRequest.objects.filter(kind="manager_validation").order_by("pk")
    from casework.transactions.monitoring.services import rule_create

    rule_version = rule_create(actor=alice, name="Fuzz's rule", action="review", mode="shadow",
                               conditions=[{"field": "amount", "op": "gte", "value": 100}])
    from casework.transactions.lists.services import list_entry_add, value_list_create

    deny_devices = value_list_create(actor=alice, name="fuzz-deny-devices", kind="deny", field="device")
    list_entry_add(actor=alice, value_list=deny_devices, value="fuzz-device")

    # A hold on a case the caller sees but does not lead: lifting it meets the 403 (the lift's 200
    # needs a lead: tests/privacy/test_holds.py).
    from casework.privacy.holds import legal_hold_place

    dpo = _dpo()
    hold = legal_hold_place(actor=dpo, case=closed_alert, reason="Seeded for the contract test.")
    # A bulk erasure awaiting its second approval (it never runs here): the investigator's token
    # meets the 404 of a request only data-protection officers and admins see.
    from casework.privacy.erasure import erasure_request

    first, second = Entity.objects.order_by("pk")[:2]
    erasure = erasure_request(actor=dpo, subjects=[[first], [second]], reason="Seeded for the contract test.")

    # A decision at authorisation time, made as a payment system makes one (its GET reads it back).
    from rest_framework.test import APIClient

    payments = APIClient()
    payments.force_authenticate(alice)
    decided = payments.post("/api/transactions/decide", {
        "transaction_id": "TX-FUZZ-1", "account_id": "ACC-FUZZ", "card_last4": "4242", "amount": "12.00",
        "currency": "EUR", "merchant": "Web Shop", "mcc": "5999", "country": "NL", "channel": "ecommerce",
        "device_id": "dev-fuzz", "occurred_at": "2026-11-20T10:00:00+00:00", "home_country": "NL"}, format="json")
    assert decided.status_code == 201, decided.content

    def task(t):
        return {"reference": t.case.reference, "id": t.pk}

    return {
        "/api/cases/{reference}/": [{"reference": open_case.reference}, {"reference": closed.reference}],
        # Its own open case: /api/cases/{reference}/close/ closes the one above before the checklist's turn.
        "/api/cases/{reference}/tasks/": [{"reference": checklist_case.reference}, {"reference": closed.reference}],
        "/api/cases/{reference}/tasks/{id}/": [task(open_task), task(done), task(closed_task)],
        "/api/cases/{reference}/attachments/{id}/": [{"reference": a.case.reference, "id": a.pk} for a in
                                                     _one_per(Attachment.objects.select_related("case"),
                                                              "content_type")],
        "/api/fraud/alerts/{reference}/": [{"reference": open_alert.reference}, {"reference": closed_alert.reference}],
        "/api/access/mutations/{reference}/": [{"reference": m.case.reference} for m in
                                               _one_per(HRMutation.objects.select_related("case"), "case__status")],
        "/api/access/requests/{id}/": [{"id": r.pk} for r in (manager_requests.filter(answered_at=None).first(),
                                                              manager_requests.exclude(answered_at=None).first()) if r],
        "/api/releases/{release_id}/": [{"release_id": r.release_id} for r in
                                        _one_per(Release.objects.select_related("case"), "case__status")],
        "/api/saved-views/{id}/": [{"id": view.pk}],
        # The demo's access change waiting for approval (issue 46), and one answered (its 409).
        "/api/approvals/{id}/": [{"id": p.pk} for p in _one_per(RunPause.objects.filter(kind="approval"), "status")],
        "/api/legal-holds/{id}/": [{"id": hold.pk}],
        "/api/erasure-requests/{id}/": [{"id": erasure.pk}],
        "/api/entities/{id}/": [{"id": e.pk} for e in _one_per(Entity.objects.all(), "kind")],
        # Admins' only: the investigator's token meets the 403 (and ignored_auth the 401).
        "/api/webhooks/endpoints/{id}/": [{"id": endpoint.pk}],
        "/api/webhooks/deliveries/{id}/": [{"id": delivery.pk}],
        # Signed by the receiving system, never with a token: unsigned requests meet the 401.
        "/api/actions/{id}/": [{"id": a.event_id} for a in _one_per(Action.objects.all(), "state")],
        "/api/support/intake/{run_id}/": [{"run_id": run.pk} for run in
                                          _one_per(AgentRun.objects.filter(pipeline="support", mode="intake"),
                                                   "status")],
        "/api/support/tickets/{ticket_id}/": [{"ticket_id": t.ticket_id} for t in
                                              _one_per(Ticket.objects.select_related("case"), "case__status")],
        "/api/transactions/investigations/{reference}/": [
            {"reference": i.case.reference}
            for i in _one_per(Investigation.objects.select_related("case"), "status", "case__status")],
        "/api/transactions/decisions/{decision_id}": [{"decision_id": decided.json()["decision_id"]}],
        "/api/transactions/rules/{id}/versions/": [{"id": rule_version.rule_id}],
        "/api/transactions/rules/{id}/versions/{number}/{action}/": [
            {"id": rule_version.rule_id, "number": rule_version.number, "action": action}
            for action in ("approve", "reject", "activate")],
        # A list with an entry: reading it, adding a value, removing one (the second removal meets the 409).
        "/api/transaction-lists/{name}/": [{"name": deny_devices.name}],
        "/api/transactions/investigations/{reference}/recommendations/{id}/": [
            {"reference": r.investigation.case.reference, "id": r.pk}
            for r in _one_per(Recommendation.objects.select_related("investigation__case"), "status")],
    }


def _one_per(queryset, *fields: str) -> list:
    """The first object (by id) for each combination of the fields' values."""
    first = {}
    for values, pk in ((row[:-1], row[-1]) for row in queryset.order_by("pk").values_list(*fields, "pk")):
        first.setdefault(values, pk)
    return list(queryset.filter(pk__in=first.values()).order_by("pk"))


def _summary(exc: BaseException) -> str:
    """Schemathesis' report without the response bodies (the lines between a status line
    such as "[200] OK:" and "Reproduce with:")."""
    keep, in_body = [], False
    for line in str(exc).splitlines():
        if re.match(r"^\s*\[\d{3}\] ", line):
            in_body = True
            keep.append(line)
        elif line.strip().startswith("Reproduce with"):
            in_body = False
        elif not in_body and line.strip():
            keep.append(line)
    return "\n".join(keep)[:4000]
