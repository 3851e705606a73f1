from __future__ import annotations

from django.apps import AppConfig


class PeopleConfig(AppConfig):
    name = "casework.people"
    label = "people"
    verbose_name = "People and roles"
