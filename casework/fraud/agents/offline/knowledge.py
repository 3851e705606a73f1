"""The knowledge_capture analyst: what a decided case teaches, as signals, a pattern and one
sentence, for later similarity checks."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agents.llm.offline_registry import offline_analyst
from casework.fraud.agents.inputs import (
    normalise_outcome,
)
from casework.fraud.agents.offline.orchestrator import _dimension_levels
from casework.fraud.agents.offline.rules import (
    LEVEL_POINTS,
)

_FRAUD_PATTERNS = {
    "transaction": "deposit-withdraw cycling",
    "network": "mule network sharing devices",
    "identity": "synthetic identity (weak face match on a new account)",
    "geo": "VPN hopping",
}
_LEGIT_PATTERNS = {
    "transaction": "income-consistent money movement",
    "network": "household or shared network",
    "identity": "new customer",
    "geo": "travel or privacy VPN use",
}
_KEYWORDS = {
    "transaction": ("cycl", "deposit", "withdraw", "income", "layering", "pass-through"),
    "network": ("device", "shared", "cluster", "mule", "ip "),
    "identity": ("face", "kyc", "identity", "new account", "days old", "synthetic"),
    "geo": ("vpn", "countr", "geo", "location"),
}


def _clip_words(text: str, limit: int) -> str:
    """The text cut at a word boundary within limit characters, with an ellipsis if cut."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text.rstrip(".")
    return text[: limit - 1].rsplit(" ", 1)[0].rstrip(",;:.") + "…"


@offline_analyst("knowledge_capture")
def knowledge_capture_analyst(data: Mapping[str, Any]) -> dict[str, Any]:
    """Outcome, reason and the strongest signals, condensed into a reusable pattern."""
    outcome = normalise_outcome(data.get("outcome")) or "Unknown outcome"
    reason = str(data.get("reason") or "").strip()
    findings = data.get("agent_findings") if isinstance(data.get("agent_findings"), Mapping) else {}
    dims = _dimension_levels(findings) if findings else {}
    elevated = sorted(((d, v) for d, v in dims.items() if v[0] != "low"), key=lambda i: -LEVEL_POINTS[i[1][0]])

    signals: list[str] = []
    for dim, (level, headline) in elevated:
        signals.append(f"{dim} {level}: {headline}")
    for factor in data.get("risk_factors") or []:
        signals.append(str(factor))
    if not signals and data.get("one_line_explanation"):
        signals.append(str(data["one_line_explanation"]))
    signals = list(dict.fromkeys(s[:300] for s in signals))[:6]

    dims_named = [d for d, _ in elevated]
    if not dims_named:  # no findings: read the dimensions off the upstream risk factors
        text = " ".join(signals).lower()
        dims_named = [d for d, words in _KEYWORDS.items() if any(w in text for w in words)]
    if outcome == "Confirmed Fraud":
        pattern = " + ".join(_FRAUD_PATTERNS[d] for d in dims_named) or "fraud without a recorded signal pattern"
    elif outcome in ("Marked Legit", "False Positive"):
        pattern = ("legitimate: " + " + ".join(_LEGIT_PATTERNS[d] for d in dims_named)
                   if dims_named else "legitimate activity, no elevated signal")
    else:  # an outcome we do not know: record the signals without calling them fraud or legit
        pattern = "undetermined: " + (", ".join(dims_named) + " signals" if dims_named else "no elevated signal")
    # One readable sentence: the pattern, where it was strongest, and the investigator's reason
    # (the signals' full text is in key_signals).
    strongest = ", ".join(f"{d} ({level})" for d, (level, _) in elevated[:3])
    sentence = f"{outcome} on {data.get('account_id') or 'an account'}: {pattern}"
    if strongest:
        sentence += f", strongest in {strongest}"
    if reason:
        sentence += f". Investigator: {_clip_words(reason, 200)}"
    if len(sentence) > 490:  # the schema's limit is 500
        sentence = _clip_words(sentence, 489)
    return {
        "key_signals": signals,
        "behavioral_pattern": pattern[:300],
        "final_outcome": outcome,
        "one_sentence_description": sentence.rstrip(".") + ".",
    }
