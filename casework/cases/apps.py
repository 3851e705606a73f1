from __future__ import annotations

from django.apps import AppConfig


class CasesConfig(AppConfig):
    name = "casework.cases"
    label = "cases"
    verbose_name = "Cases"
