from __future__ import annotations

from django.apps import AppConfig


class EntitiesConfig(AppConfig):
    name = "casework.entities"
    label = "entities"
    verbose_name = "Entities across cases"
