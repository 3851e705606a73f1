"""Need-to-know in "Add to evaluation suite": a person turns into a scenario only a case they
may see; a case outside their teams is a 404, on the page and through the service."""

from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied
from django.test import Client

from agents.evals.models import StoredScenario
from casework.people.roles import INVESTIGATOR
from casework.people.services import user_create
from casework.people.teams import team_create, team_member_set
from tests.fraud.conftest import CYCLING

pytestmark = pytest.mark.django_db


def _member(username: str, name: str, case_types: list[str]):
    user = user_create(actor="system", username=username, password=f"{username}-pass-123", role=INVESTIGATOR)
    team_member_set(actor="system", team=team_create(actor="system", name=name, case_types=case_types), user=user)
    client = Client()
    client.force_login(user)
    return user, client


def test_a_support_member_cannot_turn_a_fraud_case_into_a_scenario(alice, settings, tmp_path):
    from agents.evals.export import scenario_export
    from agents.evals.stored import stored_scenario_add
    from casework.cases.services import case_close
    from casework.fraud.services import alert_create

    settings.EVALS_SUITES_DIR = str(tmp_path)
    fraud = alert_create(actor="system", data={**CYCLING, "account_id": "ACC-REAL-4455"}).case
    case_close(actor=alice, case=fraud, outcome="confirmed_fraud", reason="Mule ring.")
    fraud.refresh_from_db()
    sam, sam_client = _member("sam", "Support", ["support_ticket"])
    _, fiona_client = _member("fiona", "Fraud", ["fraud_alert", "transaction_investigation"])
    text = scenario_export(fraud)

    assert sam_client.get(f"/evals/add/{fraud.reference}/").status_code == 404
    assert sam_client.post(f"/evals/add/{fraud.reference}/", {"scenario": text, "action": "save"}).status_code == 404
    assert sam_client.post(f"/evals/add/{fraud.reference}/",
                           {"scenario": text, "action": "download"}).status_code == 404
    with pytest.raises(PermissionDenied):
        stored_scenario_add(case=fraud, text=text, actor=sam)
    assert not StoredScenario.objects.exists()
    assert fiona_client.get(f"/evals/add/{fraud.reference}/").status_code == 200
