"""What a person usually has to do on this type's case: the lines "Add tasks from template"
adds on the Tasks tab (casework.cases.tasks.checklists), registered from the app's ready()."""

from __future__ import annotations

CHECKLIST: list[tuple[str, str]] = [
    ("contact_cardholder", "Contact the cardholder about the transaction"),
    ("review_history", "Review the card's recent history and the flagged rows"),
    ("decide_chargeback", "Decide on a chargeback or a card block"),
]
