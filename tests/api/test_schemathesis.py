"""The API against its own OpenAPI schema (schemathesis), on a live server with the demo data.

Every operation gets up to EXAMPLES generated requests (derandomized: the same requests on
every run), sent with an investigator's token, and each response is checked: no 5xx, a
documented status, a documented content type, a body that matches the schema, and (the
ignored_auth check) an authenticated operation that refuses the same request without the
token. All failures are collected and reported together, operation by operation."""

from __future__ import annotations

import re

import pytest
import requests
import schemathesis
from drf_spectacular.generators import SchemaGenerator
from hypothesis import HealthCheck, Phase, given
from hypothesis import settings as hypothesis_settings
from schemathesis import checks as st_checks
from schemathesis.specs.openapi import checks as openapi_checks

from casework.cases.demo import demo_load
from casework.people.roles import INVESTIGATOR
from casework.people.services import user_create
from casework.security.tokens import api_token_create

pytestmark = pytest.mark.django_db(transaction=True)

EXAMPLES = 8  # per operation: about 35 operations x 8 requests, well inside the suite's budget
CHECKS = [
    st_checks.not_a_server_error,
    openapi_checks.status_code_conformance,
    openapi_checks.content_type_conformance,
    openapi_checks.response_schema_conformance,
    openapi_checks.ignored_auth,
]


def test_every_operation_keeps_its_contract(live_server):
    demo_load()
    user = user_create(actor="system", username="fuzz", password="fuzz-pass-123", role=INVESTIGATOR)
    _, secret = api_token_create(actor="system", user=user, name="schemathesis")
    raw = SchemaGenerator().get_schema(request=None, public=True)
    schema = schemathesis.openapi.from_dict(raw)
    session = requests.Session()
    headers = {"Authorization": f"Token {secret}"}
    failures: list[str] = []
    operations = 0

    for result in schema.get_all_operations():
        operation = result.ok()
        operations += 1

        @given(case=operation.as_strategy())
        @hypothesis_settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                             phases=[Phase.explicit, Phase.generate],
                             suppress_health_check=list(HealthCheck))
        def run(case):
            case.call_and_validate(base_url=live_server.url, session=session, headers=headers, checks=CHECKS,
                                   timeout=30)

        try:
            run()
        except (Exception, BaseExceptionGroup) as exc:  # noqa: BLE001 - collect every operation's failure
            failures.append(f"{operation.method.upper()} {operation.path}: {_summary(exc)}")

    assert operations >= 30
    assert not failures, "\n\n".join(failures)


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

