"""The checklist each case type starts from: what a person usually has to do on such a case.

"Add tasks from template" on the Tasks tab (or POST .../tasks/from-template/) adds the lines
the case does not have yet. settings.CASE_TASK_TEMPLATES may replace a type's list:
{"fraud_alert": [("call_customer", "Call the customer"), ...]}. Keys are stable names, so a
second click adds nothing twice and a renamed title still counts as the same line.
"""

from __future__ import annotations

from django.conf import settings

DEFAULT_CHECKLISTS: dict[str, list[tuple[str, str]]] = {
    "fraud_alert": [
        ("call_customer", "Call the customer to confirm the recent activity"),
        ("freeze_account", "Freeze the account while the investigation runs"),
        ("check_devices", "Check the devices and IP addresses against known mule networks"),
        ("file_report", "File a suspicious activity report if fraud is confirmed"),
    ],
    "support_ticket": [
        ("read_thread", "Read the whole thread and the customer's history"),
        ("check_reply", "Check the suggested reply against the knowledge-base article"),
        ("reply_customer", "Reply to the customer"),
    ],
    "access_change": [
        ("confirm_manager", "Confirm the change with the employee's manager"),
        ("check_authorisation", "Check the authorisation records for the system and level"),
        ("revoke_if_unjustified", "Revoke the access if the change is not justified"),
    ],
    "transaction_investigation": [
        ("contact_cardholder", "Contact the cardholder about the transaction"),
        ("review_history", "Review the card's recent history and the flagged rows"),
        ("decide_chargeback", "Decide on a chargeback or a card block"),
    ],
    "release_risk": [
        ("review_failed_tests", "Review the failed tests in the critical areas"),
        ("confirm_rollback", "Confirm the rollback plan with the release manager"),
        ("sign_off", "Get the release sign-off from the owning team"),
    ],
}


def checklist_for(case_type: str) -> list[tuple[str, str]]:
    """(key, title) lines of this case type's checklist, from settings or the defaults."""
    overrides = getattr(settings, "CASE_TASK_TEMPLATES", None) or {}
    return list(overrides.get(case_type, DEFAULT_CHECKLISTS.get(case_type, [])))
