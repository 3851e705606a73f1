"""A saved view: a named set of queue filters, one person's, which a team (or everyone) may see."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q


class SavedView(models.Model):
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="saved_views")
    name = models.CharField(max_length=80)
    # The queue's query string (q, case_type, status, priority, assignee, sla, ordering),
    # normalised and checked against the queue's filter set when saved.
    query = models.CharField(max_length=1000, blank=True)
    # Shared with one team (casework.people.models.Team: its members see the view), or with
    # everyone; neither: the owner's alone. A view is only filters: what it lists is always the
    # viewer's own cases (casework.cases.visibility), whoever saved it.
    team = models.ForeignKey("people.Team", null=True, blank=True, on_delete=models.SET_NULL,
                             related_name="saved_views")
    everyone = models.BooleanField(default=False)
    # Shown in the navigation of everyone who can see the view.
    pinned = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name", "id"]
        constraints = [
            models.UniqueConstraint(fields=["owner", "name"], name="saved_view_name_per_owner"),
            models.CheckConstraint(condition=~Q(name=""), name="saved_view_name_required"),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def shared_label(self) -> str:
        if self.everyone:
            return "everyone"
        return self.team.name if self.team_id else "only you"
