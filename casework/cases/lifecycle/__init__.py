"""Declared lifecycles: each case type's states and allowed moves as one table, and one
service that makes every move (casework.cases.lifecycle.services.lifecycle_transition).

A case type declares its table in its own package and registers it from AppConfig.ready
(`lifecycle_register`); the shared case's own table is in `case.py`. The tables are drawn
for staff at /lifecycles/ (views.py) from the same objects the service checks against.
"""

from casework.cases.lifecycle.table import (
    AGENT,
    PERSON,
    SYSTEM,
    Fact,
    Lifecycle,
    State,
    Transition,
    actor_kind,
    claims_without_fact,
    lifecycle_get,
    lifecycle_register,
    lifecycles,
    move,
)

__all__ = ["AGENT", "PERSON", "SYSTEM", "Fact", "Lifecycle", "State", "Transition", "actor_kind",
           "claims_without_fact", "lifecycle_get", "lifecycle_register", "lifecycles", "move"]
