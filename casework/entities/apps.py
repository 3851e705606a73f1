from __future__ import annotations

from django.apps import AppConfig


class EntitiesConfig(AppConfig):
    name = "casework.entities"
    label = "entities"
    verbose_name = "Entities across cases"

    def ready(self) -> None:
        from casework.entities import receivers  # noqa: F401 - connects the case_closed receiver
