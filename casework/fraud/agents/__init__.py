"""The seven fraud agents of seed 000 as plain objects, their inputs and offline analysts.

    schemas.py   Pydantic output models (field names exactly as the seed's table)
    prompts.py   system prompts
    inputs.py    input builders: alert dict -> what each agent is shown (seed 000, 3.2)
    offline.py   deterministic rule-based analysts, registered for the offline provider

Pure Python and pydantic: importable without Django. Importing this package registers the
offline analysts.
"""

from __future__ import annotations

from agents.runtime.agent import Agent
from casework.fraud.agents import offline  # noqa: F401  (registers the offline analysts)
from casework.fraud.agents.inputs import (
    FEATURE_FIELDS,
    SPECIALIST_IDS,
    build_geo_input,
    build_identity_input,
    build_knowledge_capture_input,
    build_network_input,
    build_orchestrator_input,
    build_outcome_similarity_input,
    build_transaction_input,
    normalise_outcome,
    strip_errors,
)
from casework.fraud.agents.offline import run_offline_investigation
from casework.fraud.agents.prompts import PROMPTS
from casework.fraud.agents.schemas import (
    OUTPUT_MODELS,
    GeoOutput,
    IdentityOutput,
    KnowledgeCaptureOutput,
    NetworkOutput,
    OrchestratorOutput,
    OutcomeSimilarityOutput,
    TransactionOutput,
)

TRANSACTION_AGENT = Agent(id="transaction", system_prompt=PROMPTS["transaction"],
                          output_model=TransactionOutput, max_tokens=800)
IDENTITY_AGENT = Agent(id="identity", system_prompt=PROMPTS["identity"], output_model=IdentityOutput,
                       max_tokens=600)
GEO_AGENT = Agent(id="geo", system_prompt=PROMPTS["geo"], output_model=GeoOutput, max_tokens=600)
NETWORK_AGENT = Agent(id="network", system_prompt=PROMPTS["network"], output_model=NetworkOutput, max_tokens=600)
OUTCOME_SIMILARITY_AGENT = Agent(id="outcome_similarity", system_prompt=PROMPTS["outcome_similarity"],
                                 output_model=OutcomeSimilarityOutput, max_tokens=700)
ORCHESTRATOR_AGENT = Agent(id="orchestrator", system_prompt=PROMPTS["orchestrator"],
                           output_model=OrchestratorOutput, max_tokens=1200, verdict_key="risk_level")
KNOWLEDGE_CAPTURE_AGENT = Agent(id="knowledge_capture", system_prompt=PROMPTS["knowledge_capture"],
                                output_model=KnowledgeCaptureOutput, max_tokens=800)

FRAUD_AGENTS: dict[str, Agent] = {
    agent.id: agent
    for agent in (TRANSACTION_AGENT, IDENTITY_AGENT, GEO_AGENT, NETWORK_AGENT, OUTCOME_SIMILARITY_AGENT,
                  ORCHESTRATOR_AGENT, KNOWLEDGE_CAPTURE_AGENT)
}
# Run concurrently on alert creation, in the seed's order; the orchestrator merges them.
SPECIALISTS: tuple[str, ...] = SPECIALIST_IDS

__all__ = [
    "FEATURE_FIELDS", "FRAUD_AGENTS", "OUTPUT_MODELS", "PROMPTS", "SPECIALISTS",
    "TRANSACTION_AGENT", "IDENTITY_AGENT", "GEO_AGENT", "NETWORK_AGENT", "OUTCOME_SIMILARITY_AGENT",
    "ORCHESTRATOR_AGENT", "KNOWLEDGE_CAPTURE_AGENT",
    "TransactionOutput", "IdentityOutput", "GeoOutput", "NetworkOutput", "OutcomeSimilarityOutput",
    "OrchestratorOutput", "KnowledgeCaptureOutput",
    "build_transaction_input", "build_identity_input", "build_geo_input", "build_network_input",
    "build_outcome_similarity_input", "build_orchestrator_input", "build_knowledge_capture_input",
    "normalise_outcome", "strip_errors", "run_offline_investigation",
]
