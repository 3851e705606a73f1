"""The merge's outgoing event: a duplicate was merged into the case that survives and closed.
Registered in the outgoing webhooks' catalogue from EntitiesConfig.ready; written by
casework.cases.services.case_close_merged in the merge's transaction."""

from __future__ import annotations

from casework.outbox.catalogue import CASE, DECISION, EventType


def _object(**properties) -> dict:
    return {"type": "object", "required": list(properties), "properties": properties}

CASE_MERGED = EventType(
    "case.merged", 1,
    "A person merged a duplicate into the case that survives: `case` (now closed) sends its comments, "
    "tasks, evidence and runs to `survivor`; `decision.outcome` is `merged`. Sent in place of case.decided "
    "for the merged case; a merge is never undone (the merged case does not reopen).",
    _object(case=CASE, survivor=CASE,
          decision={**DECISION, "properties": {**DECISION["properties"],
                                               "outcome": {"type": "string", "enum": ["merged"]}}},
          moved={"type": "object", "required": ["moved", "kept"],
                 "description": "What moved to the survivor, per model (`app_label.Model`: count), and what a "
                                "unique constraint kept on the merged case.",
                 "properties": {"moved": {"type": "object", "additionalProperties": {"type": "integer"}},
                                "kept": {"type": "object", "additionalProperties": {"type": "integer"}}}}),
)
