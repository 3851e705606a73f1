from __future__ import annotations

from django.apps import AppConfig


class EntitiesConfig(AppConfig):
    name = "casework.entities"
    label = "entities"
    verbose_name = "Entities across cases"

    def ready(self) -> None:
        from casework.entities.events import CASE_MERGED
        from casework.outbox.catalogue import event_type_register

        event_type_register(CASE_MERGED)
