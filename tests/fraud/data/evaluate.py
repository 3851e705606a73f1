"""Measure the offline fraud analysts on a labelled CSV: specialists -> orchestrator.

    python -m tests.fraud.data.evaluate              # both sets
    python -m tests.fraud.data.evaluate tuning       # one set

"Flagged" means the orchestrator's risk_level is high or critical. No Django, no runtime:
the analyst functions are called directly on the input builders' dicts.
"""

from __future__ import annotations

import csv
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from casework.fraud.agents.offline import run_offline_investigation

HERE = Path(__file__).resolve().parent
SETS = {"labelled": HERE / "labelled_alerts.csv", "tuning": HERE / "tuning_alerts.csv",
        # Written from fraud typologies, not from the rules; never tuned on (make_typologies.py).
        "typologies": HERE / "typology_alerts.csv"}
FLAGGED = ("high", "critical")


def load(path: Path) -> list[dict]:
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


@dataclass
class Report:
    tp: int = 0
    fp: int = 0
    tn: int = 0
    fn: int = 0
    # scenario -> Counter of orchestrator risk levels
    by_scenario: dict[str, Counter] = field(default_factory=lambda: defaultdict(Counter))
    labels: dict[str, str] = field(default_factory=dict)
    wrong: list[tuple[str, str, str]] = field(default_factory=list)

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 0.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 0.0

    def text(self, name: str) -> str:
        lines = [
            f"{name}: {self.tp + self.fp + self.tn + self.fn} alerts, precision {self.precision:.3f}, "
            f"recall {self.recall:.3f}",
            f"  confusion: TP {self.tp}  FN {self.fn}  FP {self.fp}  TN {self.tn}",
        ]
        for scenario in sorted(self.by_scenario):
            levels = self.by_scenario[scenario]
            counts = ", ".join(f"{lv} {levels[lv]}" for lv in ("critical", "high", "medium", "low") if levels[lv])
            lines.append(f"  {self.labels[scenario]:5} {scenario:28} {counts}")
        return "\n".join(lines)


def evaluate(rows: list[dict]) -> Report:
    report = Report()
    for row in rows:
        result = run_offline_investigation(row)
        level = result["orchestrator"]["risk_level"]
        flagged = level in FLAGGED
        fraud = row["label"] == "fraud"
        report.by_scenario[row["scenario"]][level] += 1
        report.labels[row["scenario"]] = row["label"]
        if fraud and flagged:
            report.tp += 1
        elif fraud:
            report.fn += 1
            report.wrong.append((row["account_id"], row["scenario"], level))
        elif flagged:
            report.fp += 1
            report.wrong.append((row["account_id"], row["scenario"], level))
        else:
            report.tn += 1
    return report


def main(names: list[str]) -> None:
    for name in names or list(SETS):
        report = evaluate(load(SETS[name]))
        print(report.text(name))
        for account, scenario, level in report.wrong:
            print(f"    wrong: {account} {scenario} -> {level}")


if __name__ == "__main__":
    main(sys.argv[1:])
