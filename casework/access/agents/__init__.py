"""The access pipeline's parts (seed 002), one module per concern; casework/access/agents/pipeline.py
assembles them into the pipeline.

    schemas.py         the agents' output models
    prompts.py         the four agents (system prompt, output model, tools) and the seed's names
    tools.py           check_authorization, lookup_data, send_notification, generate_report
    flow.py            a run's view of its mutation, and the Step a mode is made of
    investigation.py   orchestrator and rights check steps
    requests.py        requests for information to the employee and the manager
    claim_check.py     validating the employee's claim against the records
    advisory.py        the advisory report step
    retry_schedule.py  attempts per step, settling results, escalation to manual intervention
    offline.py         deterministic analysts for the offline provider (registered on import)
"""

from __future__ import annotations

from casework.access.agents import offline  # noqa: F401  (registers the offline analysts)
