"""Approvals (issue 46): the people's side of a run paused before a consequential tool call.

The pause itself is the runtime's (agents.runtime.pause: RunPause, the executor's stop and
resume). Here: who is told (receivers), what a person may see (selectors: through the one
visibility rule), the inbox page (/approvals/), the case page's panel, the API
(/api/approvals/ ...) and the admin (the pauses, read-only; the per-tool policies).
"""
