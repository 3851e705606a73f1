"""A case's checklist: tasks a person assigns, does and reopens (each step audited)."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

TITLE_MAX_LENGTH = 200


class Task(models.Model):
    case = models.ForeignKey("cases.Case", on_delete=models.CASCADE, related_name="tasks")
    title = models.CharField(max_length=TITLE_MAX_LENGTH)
    assignee = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                 related_name="case_tasks")
    due_on = models.DateField(null=True, blank=True)
    done = models.BooleanField(default=False)
    done_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT,
                                related_name="case_tasks_done")
    done_at = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="case_tasks_created")
    created_at = models.DateTimeField(auto_now_add=True)
    # The checklist's order: a case's tasks run 1..n in the order they were added.
    position = models.PositiveIntegerField()
    # Which case-type template line the task came from ("" for one a person typed).
    template_key = models.CharField(max_length=60, blank=True)

    class Meta:
        ordering = ["case", "position", "id"]
        constraints = [
            models.UniqueConstraint(fields=["case", "position"], name="case_task_position_unique"),
            models.CheckConstraint(condition=~Q(title=""), name="case_task_title_required"),
            # Done means someone did it, at some time; undone carries neither.
            models.CheckConstraint(
                condition=Q(done=True, done_at__isnull=False, done_by__isnull=False)
                | Q(done=False, done_at__isnull=True, done_by__isnull=True),
                name="case_task_done_consistent",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.case.reference} task {self.position}: {self.title}"

    @property
    def is_overdue(self) -> bool:
        """Not done, and its due day (UTC) is past."""
        return not self.done and self.due_on is not None and self.due_on < timezone.now().date()
