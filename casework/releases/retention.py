"""A release's personal data, for retention (casework.privacy): little (who committed, what
people wrote in comments). The risk report, the release's changes and the go / no-go decision
stay; the agents' prompts and answers and the comments go."""

from __future__ import annotations

from casework.cases.types import Retention


def release_purge(case) -> dict[str, int]:
    return {}


RETENTION = Retention(purge=release_purge, shared=("agent_calls", "comments", "attachments"),
                      describe="Agent prompts and answers, comments and attachments; the risk report and the "
                               "decision stay.")
