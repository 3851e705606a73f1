"""Celery discovers tasks in each app's `tasks` module: the monitoring tasks live beside their code."""

from casework.transactions.monitoring.tasks import monitoring_evaluate, monitoring_evaluate_pending  # noqa: F401
