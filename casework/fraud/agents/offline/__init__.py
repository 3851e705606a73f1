"""Offline analysts: transparent, weighted rules in place of the seven fraud LLM agents.

Each analyst is a deterministic function of the same input dict its LLM agent is shown and
returns a dict valid against that agent's output model. Every rule that fires adds a named
weight and the explanation lists them, so an investigator can check the arithmetic.

Calibration principles (tuned on tests/fraud/data/tuning_alerts.csv, measured on the separate
labelled_alerts.csv):
- A specialist may be high on its own dimension, but the orchestrator needs corroboration:
  one elevated dimension alone never makes a case high risk, with one exception: the
  transaction score, whose high band is only reachable by combining independent money signals
  (fast cycling AND deposits far above declared income).
- Signals that honest customers show on their own (travel to many countries, VPN use, a
  shared household device and IP, a new account, large deposits in line with income) carry
  small weights; their combinations carry the larger ones.

One module per concern: rules.py (shared bands and formatting), specialists.py (transaction,
identity, geo, network), similarity.py (outcome_similarity), orchestrator.py, knowledge.py
(knowledge_capture); importing this package registers all seven with the offline provider.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from casework.fraud import thresholds as T  # the one threshold table (tests check it is shared)
from casework.fraud.agents.inputs import (
    build_geo_input,
    build_identity_input,
    build_network_input,
    build_orchestrator_input,
    build_outcome_similarity_input,
    build_transaction_input,
)
from casework.fraud.agents.offline.knowledge import knowledge_capture_analyst
from casework.fraud.agents.offline.orchestrator import orchestrator_analyst
from casework.fraud.agents.offline.rules import (
    GEO_HIGH,
    GEO_MEDIUM,
    IDENTITY_HIGH,
    IDENTITY_MEDIUM,
    LEVEL_POINTS,
    NETWORK_HIGH_CLUSTER,
    NETWORK_MEDIUM_CLUSTER,
    SIGNATURE,
    TRANSACTION_HIGH,
    TRANSACTION_MEDIUM,
)
from casework.fraud.agents.offline.similarity import outcome_similarity_analyst
from casework.fraud.agents.offline.specialists import (
    geo_analyst,
    identity_analyst,
    network_analyst,
    transaction_analyst,
)

__all__ = [
    "GEO_HIGH", "GEO_MEDIUM", "IDENTITY_HIGH", "IDENTITY_MEDIUM", "LEVEL_POINTS", "NETWORK_HIGH_CLUSTER",
    "NETWORK_MEDIUM_CLUSTER", "SIGNATURE", "SPECIALIST_ANALYSTS", "T", "TRANSACTION_HIGH", "TRANSACTION_MEDIUM",
    "geo_analyst", "identity_analyst", "knowledge_capture_analyst", "network_analyst", "orchestrator_analyst",
    "outcome_similarity_analyst", "run_offline_investigation", "transaction_analyst",
]

# -- the offline pipeline, for evaluation and demos ---------------------------------------

SPECIALIST_ANALYSTS = {
    "transaction": transaction_analyst,
    "identity": identity_analyst,
    "geo": geo_analyst,
    "network": network_analyst,
    "outcome_similarity": outcome_similarity_analyst,
}


def run_offline_investigation(
    alert: Mapping[str, Any],
    *,
    similar_confirmed_cases_count_from_system: int = 0,
    known_fraud_links_from_system: int | None = None,
    similar_cases: list[Mapping[str, Any]] | None = None,
    knowledge_patterns: list[Mapping[str, Any]] | None = None,
    unavailable: tuple[str, ...] = (),
) -> dict[str, dict]:
    """The alert_creation pipeline with the analysts called directly, no runtime and no Django:
    the five specialists, then the orchestrator on their merged findings. `unavailable` names
    specialists to treat as failed."""
    inputs = {
        "transaction": build_transaction_input(alert),
        "identity": build_identity_input(alert),
        "geo": build_geo_input(alert),
        "network": build_network_input(alert, known_fraud_links_from_system),
        "outcome_similarity": build_outcome_similarity_input(
            alert, similar_confirmed_cases_count_from_system, similar_cases, knowledge_patterns),
    }
    results: dict[str, dict] = {}
    for agent_id, analyst in SPECIALIST_ANALYSTS.items():
        if agent_id in unavailable:
            results[agent_id] = {"_error": "unavailable"}
        else:
            results[agent_id] = analyst(inputs[agent_id])
    results["orchestrator"] = orchestrator_analyst(build_orchestrator_input(results))
    return results
