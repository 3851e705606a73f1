"""The Celery app. Workers: `celery -A casework worker` (make run starts one)."""

from __future__ import annotations

import os

from celery import Celery
from celery.signals import (
    after_setup_logger,
    after_setup_task_logger,
    task_postrun,
    task_prerun,
    worker_init,
    worker_process_init,
)
from kombu.transport import TRANSPORT_ALIASES

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "casework.settings")

# The embedded broker (CELERY_BROKER_URL=filesystem://...) with atomic message writes:
# casework/broker.py.
TRANSPORT_ALIASES["filesystem"] = "casework.broker:Transport"
# Redis (CELERY_BROKER_URL=redis://...): one client per channel for kombu's synchronous
# commands instead of a new one per acknowledgement (casework/broker_redis.py).
TRANSPORT_ALIASES["redis"] = TRANSPORT_ALIASES["rediss"] = "casework.broker_redis:Transport"

app = Celery("casework")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

# Celery's Django fix-up closes every database connection before and after each task, so a
# run on PostgreSQL paid for two new connections (a server process forked each time). With
# a reuse count it never reaches, the fix-up leaves them open, and connections are kept as
# Django keeps them between requests: closed when older than CONN_MAX_AGE (0 on SQLite:
# closed after each task, as before) or unusable after an error.
app.conf.CELERY_DB_REUSE_MAX = 2**62


def _close_old_connections(sender=None, **_kwargs) -> None:
    if getattr(getattr(sender, "request", None), "is_eager", False):
        return  # an eager task runs inside its caller's transaction (tests)
    from django.db import close_old_connections

    close_old_connections()


task_prerun.connect(_close_old_connections, weak=False)
task_postrun.connect(_close_old_connections, weak=False)


def _log_as_configured(logger=None, **_kwargs) -> None:
    """The worker's log lines in LOG_FORMAT with the run's correlation and trace ids, like the
    web's (audit/logs.py): Celery replaces the root logger's handlers with its own (to honour
    --logfile and --loglevel); this gives them settings.LOGGING's formatter and filter."""
    import logging.config

    from django.conf import settings

    configurator = logging.config.DictConfigurator(settings.LOGGING)
    formatter = configurator.configure_formatter(dict(settings.LOGGING["formatters"][settings.LOG_FORMAT]))
    context = configurator.configure_filter(dict(settings.LOGGING["filters"]["context"]))
    for handler in logger.handlers if logger is not None else ():
        handler.setFormatter(formatter)
        handler.addFilter(context)


after_setup_logger.connect(_log_as_configured, weak=False)
after_setup_task_logger.connect(_log_as_configured, weak=False)


def _prefork(worker) -> bool:
    return "prefork" in str(getattr(worker, "pool_cls", "")).lower()


def _warm_up_before_consuming(sender=None, **_kwargs) -> None:
    """The LLM provider is built before the worker consumes (agents.tasks._warm_up_provider).
    A prefork parent leaves it to each child: a child cannot use its parent's event loop."""
    if not _prefork(sender):
        from agents.tasks import _warm_up_provider

        _warm_up_provider()


def _warm_up_child(**_kwargs) -> None:
    from agents.tasks import _warm_up_provider

    _warm_up_provider()


def _prepare_statements(**_kwargs) -> None:
    """A worker's PostgreSQL connections prepare what they run repeatedly
    (settings.WORKER_DB_PREPARE_THRESHOLD); the web's do not. Set before the worker's threads
    open their connections; the one this process may already hold is closed to pick it up."""
    from django.conf import settings
    from django.db import connections

    threshold = settings.WORKER_DB_PREPARE_THRESHOLD
    if threshold is None:
        return
    for alias in connections:
        if connections[alias].vendor == "postgresql":
            # The handler's settings dict is the one every thread's connection is made from.
            connections.settings[alias].setdefault("OPTIONS", {})["prepare_threshold"] = threshold
            connections[alias].close()


def _gc_tune(**_kwargs) -> None:
    """What the worker holds once warmed up leaves the collector's passes (casework/ops/gc_tuning.py)."""
    from casework.ops.gc_tuning import gc_tune

    gc_tune()


def _serve_metrics(sender=None, **_kwargs) -> None:
    """WORKER_METRICS_PORT: this worker's own Prometheus endpoint (casework/ops/worker_metrics.py).
    A prefork parent serves its children's samples through PROMETHEUS_MULTIPROC_DIR."""
    from casework.ops.worker_metrics import worker_metrics_start

    worker_metrics_start(prefork=_prefork(sender))


def _close_inherited_metrics_socket(**_kwargs) -> None:
    from casework.ops.worker_metrics import worker_metrics_close_inherited

    worker_metrics_close_inherited()


# Connected here, in the module `celery -A casework` imports, so that they are in place when
# worker_init is sent (Celery's Django fix-up has set Django up by then).
# Before the provider's warm-up, which may open a connection.
worker_init.connect(_prepare_statements, weak=False)
worker_process_init.connect(_prepare_statements, weak=False)
worker_init.connect(_warm_up_before_consuming, weak=False)
worker_init.connect(_serve_metrics, weak=False)
worker_process_init.connect(_warm_up_child, weak=False)
worker_process_init.connect(_close_inherited_metrics_socket, weak=False)
# Last: after the warm-up, so that the provider and its SDK are frozen too.
worker_init.connect(_gc_tune, weak=False)
worker_process_init.connect(_gc_tune, weak=False)
