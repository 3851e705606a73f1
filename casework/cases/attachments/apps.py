from __future__ import annotations

from django.apps import AppConfig


class CaseAttachmentsConfig(AppConfig):
    name = "casework.cases.attachments"
    label = "case_attachments"
    verbose_name = "Case attachments"

    def ready(self) -> None:
        # One tab on every case type's page, the three being built included: registered here,
        # after the case-type apps (INSTALLED_APPS order), so it comes after their own tabs.
        from casework.cases.types import CASE_TYPES, Tab, case_type_register_tab

        for key in CASE_TYPES:
            case_type_register_tab(key, Tab("evidence", "Evidence", "case_attachments/_tab.html"))
        from casework.cases.attachments.restore import attachments_verify_stored
        from casework.ops.restore_checks import restore_check_register

        # The restore drill checks every evidence file against its recorded hash.
        restore_check_register(attachments_verify_stored)
