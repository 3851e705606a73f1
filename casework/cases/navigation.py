"""What every page's navigation and the queue's forms read, cached (issue 29).

Per person: the saved views pinned into their navigation, their unread notification count
and their teams (casework.people.models.Team: the "share with" choices). For everyone: the investigators a case may be
assigned to (the bulk bar and the assignee filter). Without the cache these were five
queries on every queue page; with it, one cache read (`get_many`, one round trip to Redis).

Staleness is ruled out by generations, not by expiry:
- each person's entry is tagged with two generations read *before* its queries: the shared
  one (saved views, teams, investigators) and the person's own (notifications);
- a change sets a new random generation, at once (a reader in the same transaction, as in a
  test, sees it) and again when its transaction commits (a reader that queried the database
  before the commit cannot keep its stale entry: it was tagged with an older generation);
- an entry whose tags differ from the current generations is read again from the database;
- each read runs when a page first asks for it and is added to the entry (READS).
Random tokens rather than counters: every backend's `set` is atomic, not every `incr` is.

What changes these reads bumps the generation: the receivers below (any save or delete of a
notification, a saved view, a group, a user; any change of a user's groups, from either
side) and the notification services' queryset UPDATEs (marking read), which send no signal.
The saved views and notifications sit in the layer above the case core: their apps register
their reads and models here (nav_read_register, nav_watch), and this module names neither.
ENTRY_SECONDS bounds the one case left: a change made while the cache was unreachable.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable
from typing import Any

from django.contrib.auth.models import Group, User
from django.core.cache import caches
from django.db import transaction
from django.db.models.signals import m2m_changed, post_delete, post_save

logger = logging.getLogger(__name__)

ALIAS = "nav"
SHARED = "nav:gen:shared"
ENTRY_SECONDS = 600
GENERATION_SECONDS = 7 * 24 * 3600


def _cache():
    return caches[ALIAS]


def _person(user_id: int) -> str:
    return f"nav:gen:user:{user_id}"


def _entry(user_id: int) -> str:
    return f"nav:entry:{user_id}"


def _teams(user) -> list[tuple[int, str]]:
    """The teams this person is in (casework.people.models.Team): what a view is shared with."""
    from casework.people.models import Team

    return list(Team.objects.filter(memberships__user_id=user.pk).order_by("name", "id").values_list("pk", "name"))


# Each read runs when a page first asks for it (a dashboard needs two of the four). The apps
# above the case core add theirs (nav_read_register: the saved views app its pinned views, the
# notifications app the unread count) from their AppConfig.ready.
# The case core's visibility rule adds "investigators" (whom this person may assign cases to)
# and "case_teams" (their teams' roles and case types).
READS: dict[str, Callable[[User], Any]] = {"teams": _teams}


def nav_read_register(name: str, read: Callable[[User], Any]) -> None:
    READS[name] = read


def _generation(cache, key: str, found: dict) -> str:
    if key in found:
        return found[key]
    cache.add(key, secrets.token_hex(8), GENERATION_SECONDS)  # a concurrent bump wins
    return cache.get(key)


def _entry_for(user) -> dict:
    """This person's entry, current or empty, once per request (memoised on the user)."""
    entry = getattr(user, "_casework_nav", None)
    if entry is None:
        try:
            cache = _cache()
            found = cache.get_many([SHARED, _person(user.pk), _entry(user.pk)])
            tags = [_generation(cache, SHARED, found), _generation(cache, _person(user.pk), found)]
            entry = found.get(_entry(user.pk))
            if entry is None or entry.get("tags") != tags:
                entry = {"tags": tags}
        except Exception:  # noqa: BLE001 - the cache unreachable: read the database, show the page
            logger.warning("Navigation cache unavailable; reading the database.", exc_info=True)
            entry = {"tags": None}
        user._casework_nav = entry
    return entry


def nav_get(user, name: str):
    """One of this person's navigation reads (READS), from the cache when current."""
    entry = _entry_for(user)
    if name not in entry:
        entry[name] = READS[name](user)
        if entry["tags"] is not None:
            # Tagged with the generations read before the query: a change since makes it stale.
            try:
                _cache().set(_entry(user.pk), entry, ENTRY_SECONDS)
            except Exception:  # noqa: BLE001
                logger.warning("Navigation cache unavailable.", exc_info=True)
    return entry[name]


def _bump(keys: list[str]) -> None:
    try:
        _cache().set_many({key: secrets.token_hex(8) for key in keys}, GENERATION_SECONDS)
    except Exception:  # noqa: BLE001 - never fail a write because the cache is down
        logger.warning("Navigation cache unavailable; entries expire within %s s.", ENTRY_SECONDS, exc_info=True)


def nav_changed(*, user_id: int | None = None) -> None:
    """What one person's navigation shows changed (`user_id`), or what everyone's may show.

    Bumps now, and once more after the commit: one hook per transaction, however many
    changes it makes (the audit sequencer's pattern: the hook is looked for in the
    connection's pending list, which drops it with a rolled-back savepoint)."""
    keys = [_person(user_id)] if user_id is not None else [SHARED]
    _bump(keys)
    conn = transaction.get_connection()
    if not conn.in_atomic_block:
        return  # autocommit: the write is committed already, and the bump came after it
    conn.__dict__.setdefault("_casework_nav_pending", set()).update(keys)
    if not any(hook[1] is nav_after_commit for hook in conn.run_on_commit):
        transaction.on_commit(nav_after_commit, robust=True)


def nav_after_commit() -> None:
    """The transaction's changes are visible: bump what it changed again."""
    keys = transaction.get_connection().__dict__.pop("_casework_nav_pending", set())
    if keys:
        _bump(sorted(keys))


# --- Receivers: every save and delete of what the entries hold ----------------------------


# A model an app above registered (nav_watch) -> the field naming the one person whose
# navigation its rows change, or None: a change may show in everyone's.
WATCHED: dict[type, str | None] = {}


def _watched_changed(sender, instance, **kwargs) -> None:
    field = WATCHED.get(sender)
    if field is None:
        nav_changed()
    elif getattr(instance, field) is not None:
        nav_changed(user_id=getattr(instance, field))


def _shared_changed(sender, **kwargs) -> None:
    nav_changed()


def _user_saved(sender, instance, update_fields=None, **kwargs) -> None:
    # Logging in saves last_login only: nothing the navigation shows.
    if update_fields is not None and set(update_fields) <= {"last_login"}:
        return
    nav_changed()


def _groups_changed(sender, action, **kwargs) -> None:
    if action in ("post_add", "post_remove", "post_clear"):
        nav_changed()


def nav_watch(model: type, *, uid: str, person: str | None = None) -> None:
    """Every save and delete of `model` changes what the navigation shows: the person's whose
    id its `person` field holds, or (no `person`) everyone's. Called by the app that owns the
    model, beside its nav_read_register."""
    WATCHED[model] = person
    post_save.connect(_watched_changed, sender=model, dispatch_uid=f"nav_{uid}_saved")
    post_delete.connect(_watched_changed, sender=model, dispatch_uid=f"nav_{uid}_deleted")


def nav_connect() -> None:
    from casework.people.models import Team, TeamMembership

    # Teams decide whom a case may be assigned to (casework.cases.visibility).
    for model in (Team, TeamMembership):
        post_save.connect(_shared_changed, sender=model, dispatch_uid=f"nav_{model.__name__}_saved")
        post_delete.connect(_shared_changed, sender=model, dispatch_uid=f"nav_{model.__name__}_deleted")
    post_save.connect(_shared_changed, sender=Group, dispatch_uid="nav_group_saved")
    post_delete.connect(_shared_changed, sender=Group, dispatch_uid="nav_group_deleted")
    post_save.connect(_user_saved, sender=User, dispatch_uid="nav_user_saved")
    post_delete.connect(_shared_changed, sender=User, dispatch_uid="nav_user_deleted")
    m2m_changed.connect(_groups_changed, sender=User.groups.through, dispatch_uid="nav_user_groups")

