from __future__ import annotations

from django import forms

from casework.cases.saved_views.models import SavedView
from casework.people.models import Team


class SavedViewForm(forms.Form):
    name = forms.CharField(max_length=80)
    query = forms.CharField(required=False, max_length=1000, widget=forms.HiddenInput)
    share = forms.ChoiceField(required=False, choices=[("", "Only me")])
    pinned = forms.BooleanField(required=False, label="Show in the navigation")

    def __init__(self, *args, user, **kwargs):
        super().__init__(*args, **kwargs)
        # The teams this person is in (casework.people.models.Team), not their role groups.
        teams = [(f"team:{t.pk}", t.name) for t in Team.objects.filter(memberships__user=user).order_by("name")]
        self.fields["share"].choices = [("", "Only me"), *teams, ("everyone", "Everyone")]

    def sharing(self) -> dict:
        share = self.cleaned_data.get("share") or ""
        # A choice offered (the field's validation): one of this person's teams.
        team = Team.objects.get(pk=int(share.split(":", 1)[1])) if share.startswith("team:") else None
        return {"team": team, "everyone": share == "everyone"}

    @staticmethod
    def share_value(view: SavedView) -> str:
        return "everyone" if view.everyone else (f"team:{view.team_id}" if view.team_id else "")
