from __future__ import annotations

from django.apps import AppConfig


class PrivacyConfig(AppConfig):
    """Personal data has an end (DESIGN.md): retention per case type, legal holds and
    subject-access exports. It sits on cases (beside entities): it iterates the case-type
    registry for what each type's personal data is and never names a type."""

    name = "casework.privacy"
    label = "privacy"
    verbose_name = "Personal data"

    def ready(self) -> None:
        from django.core import checks

        from casework.cases.visibility import addressed_register
        from casework.privacy.checks import retention_check
        from casework.privacy.erasure import erasure_cases_addressed

        checks.register(retention_check)
        # A data-protection officer reads the references of the cases an erasure request
        # covers (its report names each one), not the cases: their role is the need-to-know.
        addressed_register(erasure_cases_addressed)
