"""The navigation's cached reads (casework/cases/navigation.py): what every page shows
(pinned views, unread count, teams, investigators) costs no query once read, and every
service or signal that changes it makes the next page read it again."""

from __future__ import annotations

import socket

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from casework.cases import navigation
from casework.cases.notifications.models import Notification
from casework.cases.notifications.services import (
    notification_send,
    notifications_mark_all_read,
    notifications_mark_read_for_case,
)
from casework.cases.saved_views.services import saved_view_create, saved_view_delete, saved_view_update
from casework.cases.services import case_create
from casework.people.roles import INVESTIGATOR, MANAGER
from casework.people.services import user_create, user_roles_set
from casework.people.teams import team_create, team_member_remove, team_member_set
from tests.conftest import in_every_team

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _own_nav_cache(settings, tmp_path):
    """Each test here counts the queries of a cold or a warm entry: it gets a nav cache of its
    own, which nothing else in the run (a file cache under VAR_DIR outlives tests) has touched."""
    settings.CACHES = {**settings.CACHES, "nav": {"BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
                                                  "LOCATION": str(tmp_path / "nav")}}


NAV_TABLES = ("saved_views_savedview", "notifications_notification", "auth_user_groups", "people_team")


def page(client, **params) -> tuple[str, list[str]]:
    with CaptureQueriesContext(connection) as queries:
        response = client.get("/cases/", params)
    assert response.status_code == 200
    return response.content.decode(), [q["sql"] for q in queries.captured_queries]


def nav_queries(sql: list[str]) -> list[str]:
    # The roles check reads the person's groups too (auth_group by name, not by id): not the navigation's.
    return [s for s in sql if any(t in s for t in NAV_TABLES) and '"auth_group"."name" AS "name"' not in s]


def notify(user, subject="Look") -> Notification:
    return notification_send(actor="system", kind="assigned", subject=subject, body="b", user=user)


def test_a_warm_queue_page_reads_nothing_for_its_navigation(alice_client, alice):
    saved_view_create(actor=alice, name="Critical", query="priority=critical", pinned=True)
    notify(alice)
    case_create(actor=alice, case_type="release_risk", title="Release 2.0")
    cold_html, cold = page(alice_client)
    warm_html, warm = page(alice_client)
    assert nav_queries(cold) and not nav_queries(warm)
    assert warm_html == cold_html.replace(*_csrf_pair(cold_html, warm_html))
    # Session, user, roles, the capped count and the page's rows: no more, whatever the size.
    assert len(warm) == 5, warm


def _csrf_pair(a: str, b: str) -> tuple[str, str]:
    import re

    pattern = re.compile(r'"X-CSRFToken": "([^"]+)"')
    return pattern.search(a).group(1), pattern.search(b).group(1)


def test_the_unread_count_follows_new_and_read_notifications(alice_client, alice):
    case = case_create(actor=alice, case_type="release_risk", title="Release 2.0")
    assert 'id="nav-unread"' not in page(alice_client)[0]
    notification_send(actor="system", kind="assigned", subject="s", body="b", user=alice, case=case)
    notify(alice)
    assert 'id="nav-unread">2<' in page(alice_client)[0]
    notifications_mark_read_for_case(user=alice, case=case)  # a queryset UPDATE: no signal
    assert 'id="nav-unread">1<' in page(alice_client)[0]
    notifications_mark_all_read(user=alice)
    assert 'id="nav-unread"' not in page(alice_client)[0]


def test_one_persons_notification_leaves_anothers_entry_alone(alice_client, alice, ivan):
    page(alice_client)
    notify(ivan)
    html, sql = page(alice_client)
    assert not nav_queries(sql) and 'id="nav-unread"' not in html
    note = notify(alice)
    assert 'id="nav-unread">1<' in page(alice_client)[0]
    note.delete()  # a delete is a change too (a case's or a person's deletion cascades here)
    assert 'id="nav-unread"' not in page(alice_client)[0]


def test_pinned_views_follow_create_update_delete_and_team_sharing(client, alice, ivan):
    team = team_create(actor="system", name="fraud-team", case_types=["fraud_alert"])
    team_member_set(actor="system", team=team, user=alice)
    client.force_login(ivan)
    assert "Team fraud" not in page(client)[0]
    view = saved_view_create(actor=alice, name="Team fraud", query="case_type=fraud_alert", team=team, pinned=True)
    assert "Team fraud" not in page(client)[0]  # ivan is not in the team yet
    team_member_set(actor="system", team=team, user=ivan)
    assert "Team fraud" in page(client)[0]
    saved_view_update(actor=alice, view=view, name="Fraud, team")
    html = page(client)[0]
    assert "Fraud, team" in html and "Team fraud" not in html
    saved_view_update(actor=alice, view=view, pinned=False)
    assert "Fraud, team" not in page(client)[0]
    saved_view_update(actor=alice, view=view, pinned=True)
    team_member_remove(actor="system", team=team, user=ivan)
    assert "Fraud, team" not in page(client)[0]
    team_member_set(actor="system", team=team, user=ivan)
    assert "Fraud, team" in page(client)[0]
    saved_view_delete(actor=alice, view=view)
    assert "Fraud, team" not in page(client)[0]


def test_the_share_choices_follow_the_persons_teams(alice_client, alice):
    team = team_create(actor="system", name="night-shift", case_types=["fraud_alert"])
    assert "night-shift" not in page(alice_client)[0]
    team_member_set(actor="system", team=team, user=alice)
    assert f'<option value="team:{team.pk}">night-shift</option>' in page(alice_client)[0]
    team.name = "day-shift"
    team.save()
    html = page(alice_client)[0]
    assert "day-shift" in html and "night-shift" not in html


def test_investigators_in_the_filter_and_the_bulk_bar_follow_roles(alice_client, alice, mona):
    html = page(alice_client)[0]
    assert html.count('<option value="alice">alice</option>') == 2 and '"mona"' not in html
    zoe = user_create(actor="system", username="zoe", password="zoe-pass-123", role=INVESTIGATOR)
    # In no team: nobody may be assigned a case she could not see (casework.cases.visibility).
    assert '"zoe"' not in page(alice_client)[0]
    in_every_team(zoe)
    assert page(alice_client)[0].count('<option value="zoe">zoe</option>') == 2
    user_roles_set(actor="system", user=zoe, roles={MANAGER}, source="test")
    assert '"zoe"' not in page(alice_client)[0]
    # The cached choices still filter: a valid name filters, an unknown one is named.
    assert page(alice_client, assignee="alice")[0].count('<option value="alice" selected>alice</option>') == 1
    assert alice_client.get("/cases/", {"assignee": "zoe"}).status_code == 400


def test_logging_in_keeps_everyones_entries(client, alice):
    client.force_login(alice)
    page(client)
    client.logout()
    assert client.login(username="alice", password="alice-pass-123")  # saves last_login only
    assert not nav_queries(page(client)[1])


@pytest.mark.django_db(transaction=True)
def test_an_entry_read_before_the_commit_does_not_outlive_it():
    """Another process reads the database after the bump made inside this transaction but
    before its commit, and keeps what it read: the bump at commit makes the next page read
    again. (Real commits: a test's own transaction never commits.)"""
    alice = user_create(actor="system", username="alice", password="alice-pass-123", role=INVESTIGATOR)
    cache = navigation._cache()
    with transaction.atomic():
        notify(alice)
        found = cache.get_many([navigation.SHARED, navigation._person(alice.pk)])
        tags = [found[navigation.SHARED], found[navigation._person(alice.pk)]]
        cache.set(navigation._entry(alice.pk), {"tags": tags, "unread": 0})  # what that process keeps
        alice.__dict__.pop("_casework_nav", None)
        assert navigation.nav_get(alice, "unread") == 0  # still before the commit
    alice.__dict__.pop("_casework_nav", None)
    assert navigation.nav_get(alice, "unread") == 1


def test_a_page_reads_only_what_it_shows(client, mona):
    """A manager's page shows no pinned views, teams or investigators: no query for them."""
    client.force_login(mona)
    with CaptureQueriesContext(connection) as queries:
        assert client.get("/notifications/").status_code == 200
    sql = [q["sql"] for q in queries.captured_queries]
    assert any("notifications_notification" in s and "COUNT" in s for s in sql)
    assert not any("saved_views_savedview" in s for s in sql)


def test_the_page_renders_from_the_database_when_the_cache_is_down(alice_client, alice, settings):
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    settings.CACHES = {**settings.CACHES, "nav": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": f"redis://127.0.0.1:{port}/0"}}
    notify(alice)
    html, sql = page(alice_client)
    assert 'id="nav-unread">1<' in html and nav_queries(sql)
