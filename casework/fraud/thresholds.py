"""The fraud thresholds in one table, shared by the built-in scorer (casework/fraud/scoring.py),
the offline analysts (agents/pipelines/fraud_agents/offline.py) and the case page's
side-by-side view (casework/fraud/assessment.py).

Bands are (high from, medium from) on a 0-1 score unless said otherwise.
"""

from __future__ import annotations

# The orchestrator's and the page's bands on the transaction anomaly score.
TRANSACTION_BANDS = (0.60, 0.35)
# Identity and geo bands on their rule scores.
IDENTITY_BANDS = (0.65, 0.35)
GEO_BANDS = (0.60, 0.30)
# Network bands on the cluster size (accounts sharing a device or IP with this one).
NETWORK_CLUSTER_BANDS = (6, 3)
# Outcome similarity: likelihood that this alert repeats a confirmed pattern.
LIKELIHOOD_BANDS = (0.70, 0.40)


def band(value: float, bands: tuple[float, float]) -> str:
    high, medium = bands
    return "high" if value >= high else "medium" if value >= medium else "low"
