"""Keeps each final fraud decision's DecidedVector (the look-alike search's row) in step with
the decision, in the decision's own transaction: a decision saved without its row would be
invisible to every later alert's look-alikes."""

from __future__ import annotations

from django.db.models.signals import post_save
from django.dispatch import receiver

from casework.cases.models import Decision


@receiver(post_save, sender=Decision, dispatch_uid="fraud_decided_vector")
def _decision_saved(sender, instance: Decision, raw: bool = False, **kwargs) -> None:
    if raw:
        return
    from casework.cases.models import Case
    from casework.fraud.similarity import decided_vector_sync

    case_type = getattr(instance.case, "case_type", None) if instance.case_id else None
    if case_type is None:
        case_type = Case.objects.filter(pk=instance.case_id).values_list("case_type", flat=True).first()
    if case_type == "fraud_alert":
        decided_vector_sync(instance)
