"""The case report: one PDF (WeasyPrint, A4) for auditors and regulators, from the case's own
templates: the case, the agents' findings, the decision, the tasks and evidence, and the
case's audit entries with their hashes, so the report can be checked against the chain."""
