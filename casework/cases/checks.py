"""System checks of the case core's settings that need the registered case types (which register
themselves from their AppConfig.ready, after settings are read)."""

from __future__ import annotations

from django.conf import settings
from django.core import checks


def case_sla_check(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    """settings.CASE_SLA names only registered case types (a typo would silently keep the
    default deadlines for the type meant)."""
    from casework.cases.types import CASE_TYPES

    errors = []
    for case_type, hours in getattr(settings, "CASE_SLA", {}).items():
        if case_type != "*" and case_type not in CASE_TYPES:
            parts = ",".join(f"{case_type}:{priority}={value:g}" for priority, value in hours.items())
            errors.append(checks.Error(
                f"CASE_SLA: {parts!r} names an unknown case type {case_type!r}.",
                hint=f"Use one of: {', '.join(CASE_TYPES)}.", id="cases.E001"))
    return errors


def lifecycle_claims_check(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    """Every registered lifecycle's state that claims an effect outside Casework names the fact
    it rests on (DESIGN: "A claim rests on a fact"), and that fact's record is a model."""
    from django.apps import apps

    from casework.cases.lifecycle.table import claims_without_fact, lifecycles

    errors = [checks.Error(f"A claim without a fact: {problem}.", id="cases.E002",
                           hint="Give the State a claim and a Fact naming the record of the effect.")
              for lifecycle in lifecycles() for problem in claims_without_fact(lifecycle)]
    for lifecycle in lifecycles():
        for state in lifecycle.claims():
            if state.fact is not None:
                try:
                    apps.get_model(state.fact.record)
                except (LookupError, ValueError):
                    errors.append(checks.Error(f"{lifecycle.key}.{state.key}: its fact names {state.fact.record!r}, "
                                               "which is no model.", id="cases.E003"))
    return errors
