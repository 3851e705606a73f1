"""Output models of the seven fraud agents, field names exactly as seed 000's table.

Tolerant where a model reasonably differs ("High" for "high", a lone string where a list
was asked for, surrounding whitespace), strict where the value would be garbage (a score
of 7, a risk level of "banana", an empty explanation, a negative count). Extra keys are
ignored on validation but the JSON schema says additionalProperties: false, so a model
told the schema is asked not to send them.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

RiskLevel = Literal["low", "medium", "high"]
OverallRiskLevel = Literal["low", "medium", "high", "critical"]
Priority = Literal["critical", "high", "medium", "low"]

MAX_ITEMS = 20
MAX_ITEM_CHARS = 300
MAX_TEXT_CHARS = 4000


def _level(value: Any) -> Any:
    """'High', ' HIGH ', 'high risk' -> 'high'; anything else is left for the Literal to refuse."""
    if isinstance(value, str):
        cleaned = value.strip().lower().replace("_", " ")
        if cleaned.endswith(" risk"):
            cleaned = cleaned[: -len(" risk")].strip()
        return cleaned
    return value


def _string_list(value: Any) -> Any:
    """A lone string becomes a one-item list; None becomes []; blank items are dropped."""
    if value is None:
        return []
    if isinstance(value, str):
        value = [value]
    if isinstance(value, list | tuple):
        items = []
        for item in value:
            if isinstance(item, str):
                item = item.strip()
                if not item:
                    continue
            items.append(item)
        return items
    return value


def _text(value: Any) -> Any:
    return value.strip() if isinstance(value, str) else value


Level = Annotated[RiskLevel, BeforeValidator(_level)]
OverallLevel = Annotated[OverallRiskLevel, BeforeValidator(_level)]
PriorityLevel = Annotated[Priority, BeforeValidator(_level)]
Item = Annotated[str, Field(min_length=1, max_length=MAX_ITEM_CHARS)]
Items = Annotated[list[Item], BeforeValidator(_string_list), Field(max_length=MAX_ITEMS)]
Text = Annotated[str, BeforeValidator(_text), Field(min_length=1, max_length=MAX_TEXT_CHARS)]
Probability = Annotated[float, Field(ge=0.0, le=1.0)]
Count = Annotated[int, Field(ge=0, le=1_000_000)]


class _Output(BaseModel):
    model_config = ConfigDict(extra="ignore", json_schema_extra={"additionalProperties": False})


class TransactionOutput(_Output):
    """Transaction / behaviour specialist."""

    anomaly_score: Probability = Field(
        description="How anomalous the money movement is, from 0 (ordinary) to 1 (clearly anomalous)."
    )
    detected_patterns: Items = Field(
        description="Named patterns found, each with the figure behind it, e.g. "
        "'rapid deposit-withdraw cycling: 1.5 days on average'. Empty if none."
    )
    short_explanation: Text = Field(
        description="Two or three sentences on why the score is what it is, naming the signals and figures used."
    )


class IdentityOutput(_Output):
    """Identity / KYC specialist."""

    identity_risk: Level = Field(description="Identity risk: low, medium or high.")
    indicators: Items = Field(
        description="Identity signals found, each with its figure, e.g. 'face match 0.58 (borderline)'."
    )
    explanation: Text = Field(description="Why the identity risk is at this level, naming the signals used.")


class GeoOutput(_Output):
    """Geography / VPN specialist."""

    geo_risk: Level = Field(description="Geographic / access risk: low, medium or high.")
    indicators: Items = Field(
        description="Access signals found, each with its figure, e.g. 'VPN on 85% of sessions'."
    )
    explanation: Text = Field(description="Why the geo risk is at this level, naming the signals used.")


class NetworkOutput(_Output):
    """Network / cluster specialist."""

    cluster_size: Count = Field(
        description="Estimated number of other accounts linked to this one through a shared device or IP address."
    )
    known_fraud_links: Count = Field(
        description="How many of the linked accounts are confirmed fraud (0 when the system reports none)."
    )
    shared_signals: Items = Field(
        description="What the account shares with others, e.g. 'device shared with 4 other accounts'."
    )
    explanation: Text = Field(description="What the links suggest (household, shared network, mule ring ...) and why.")


class OutcomeSimilarityOutput(_Output):
    """Similarity to past decided cases."""

    fraud_likelihood: Probability = Field(
        description="Likelihood, 0 to 1, that this case ends as confirmed fraud, judged from similar past outcomes."
    )
    similar_confirmed_cases_count: Count = Field(
        description="Number of similar past cases that were confirmed as fraud (as reported by the system)."
    )
    explanation: Text = Field(
        description="How past outcomes and captured patterns bear on this case, naming the ones used."
    )


class OrchestratorOutput(_Output):
    """Senior investigator: the one summary the investigator reads first."""

    risk_level: OverallLevel = Field(description="Overall risk: low, medium, high or critical.")
    confidence: Probability = Field(
        description="Confidence in the risk level, 0 to 1; lower when specialists disagree or are unavailable."
    )
    key_drivers: Items = Field(
        description="The findings that drive the risk level, strongest first, each naming its specialist."
    )
    priority: PriorityLevel = Field(description="Investigation priority: critical, high, medium or low.")
    investigation_summary: Text = Field(
        description="A short paragraph for the investigator: the verdict, the corroborating evidence, "
        "what speaks against it and which specialists were unavailable."
    )


class KnowledgeCaptureOutput(_Output):
    """Pattern captured when a case is closed, fed back to future similarity checks."""

    key_signals: Items = Field(description="The signals that mattered for the outcome, strongest first.")
    behavioral_pattern: Text = Field(
        description="A short name for the behaviour, e.g. 'deposit-withdraw cycling' or 'household device sharing'."
    )
    # The limits are those of the stored pattern (casework.fraud.models.KnowledgePattern).
    final_outcome: Text = Field(
        description="The decision: Confirmed Fraud, Marked Legit or False Positive.", max_length=100
    )
    one_sentence_description: Text = Field(
        description="One sentence (at most 500 characters) an investigator can recognise the pattern by next time.",
        max_length=500,
    )


OUTPUT_MODELS: dict[str, type[BaseModel]] = {
    "transaction": TransactionOutput,
    "identity": IdentityOutput,
    "geo": GeoOutput,
    "network": NetworkOutput,
    "outcome_similarity": OutcomeSimilarityOutput,
    "orchestrator": OrchestratorOutput,
    "knowledge_capture": KnowledgeCaptureOutput,
}
