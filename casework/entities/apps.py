from __future__ import annotations

from django.apps import AppConfig


class EntitiesConfig(AppConfig):
    name = "casework.entities"
    label = "entities"
    verbose_name = "Entities across cases"

    def ready(self) -> None:
        from casework.cases.merges import case_merges_register
        from casework.entities import receivers  # noqa: F401 - a decision flags what its case names
        from casework.entities.selectors import case_merged_ids, case_merged_into

        # The case's timeline reads what was merged into it; its page sends a merged case on.
        case_merges_register(merged_ids=case_merged_ids, merged_into=case_merged_into)

        from casework.entities.events import CASE_MERGED
        from casework.outbox.catalogue import event_type_register

        event_type_register(CASE_MERGED)
