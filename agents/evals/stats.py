"""The statistics of repeated runs: how sure a pass rate is, and whether it really dropped.

- wilson(k, n): the 95% Wilson score interval of a pass rate k/n (good at small n and at 0 or
  1, where the normal approximation gives nonsense);
- pass_at_k(n, c, k): the chance that at least one of k attempts passes, and pass_hat_k (pass^k)
  the chance that all k pass, each estimated without bias from n attempts of which c passed
  (Chen et al. 2021, "Evaluating Large Language Models Trained on Code"; Yao et al. 2024,
  tau-bench);
- two_proportion(k1, n1, k2, n2): a one-sided two-proportion z-test that the second rate is
  below the first; the regression gate calls a drop a regression when p < ALPHA.
Attempts of one scenario are treated as independent draws, which is what a repeat is for.
"""

from __future__ import annotations

import math

Z95 = 1.959963984540054
ALPHA = 0.05


def wilson(k: int, n: int, z: float = Z95) -> tuple[float, float]:
    if n == 0:
        return 0.0, 1.0
    p = k / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return round(max(0.0, centre - half), 4), round(min(1.0, centre + half), 4)


def pass_at_k(n: int, c: int, k: int) -> float:
    if n - c < k:
        return 1.0
    return round(1 - math.comb(n - c, k) / math.comb(n, k), 4)


def pass_hat_k(n: int, c: int, k: int) -> float:
    if k > n:
        raise ValueError("k cannot exceed the number of attempts")
    return round(math.comb(c, k) / math.comb(n, k), 4)


def two_proportion(k1: int, n1: int, k2: int, n2: int) -> float:
    """One-sided p-value that rate 2 (k2/n2) is below rate 1 (k1/n1); 1.0 when it is not lower."""
    if not n1 or not n2:
        return 1.0
    p1, p2 = k1 / n1, k2 / n2
    pooled = (k1 + k2) / (n1 + n2)
    se = math.sqrt(pooled * (1 - pooled) * (1 / n1 + 1 / n2))
    if se == 0:
        return 1.0 if p2 >= p1 else 0.0
    z = (p2 - p1) / se
    return round(0.5 * (1 + math.erf(z / math.sqrt(2))), 6)
