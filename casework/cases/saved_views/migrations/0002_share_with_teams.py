"""Saved views shared with a team: a casework.people Team instead of a Django auth Group (which
also holds roles: a view shared with "investigator" went to every investigator, whatever their
teams). Each existing share moves to the Team of the same name, slug or SSO group, when its
owner is in that team; a share no team matches (a role group such as "investigator", or a group
no team took over) becomes the owner's alone, the narrower choice: they can share it again.
The views' filters are untouched, and what a view lists was and is the viewer's own cases."""

from __future__ import annotations

import django.db.models.deletion
from django.db import migrations, models
from django.utils.text import slugify


def _team_for(group, teams):
    for team in teams:
        if (team.name.lower() == group.name.lower() or team.slug == slugify(group.name)
                or group.name in (team.sso_groups or [])):
            return team
    return None


def shares_to_teams(apps, schema_editor):
    SavedView = apps.get_model("saved_views", "SavedView")
    Team = apps.get_model("people", "Team")
    TeamMembership = apps.get_model("people", "TeamMembership")
    teams = list(Team.objects.order_by("pk"))
    kept = narrowed = 0
    for view in SavedView.objects.filter(team__isnull=False).select_related("team"):
        team = _team_for(view.team, teams)
        if team is not None and TeamMembership.objects.filter(team=team, user_id=view.owner_id).exists():
            view.share_team = team
            view.save(update_fields=["share_team"])
            kept += 1
        else:
            narrowed += 1
    if kept or narrowed:
        print(f"\n  Saved views shared with a group: {kept} now shared with the team of that name, "
              f"{narrowed} now their owner's alone (no team of theirs matched).")


class Migration(migrations.Migration):

    dependencies = [
        ("people", "0002_team_teammembership"),
        ("saved_views", "0001_initial"),
    ]

    operations = [
        migrations.AddField(
            model_name="savedview",
            name="share_team",
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL,
                                    related_name="+", to="people.team"),
        ),
        migrations.RunPython(shares_to_teams, migrations.RunPython.noop),
    ]
