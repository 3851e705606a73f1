"""The garbage collector in the long-running processes: Celery workers and the web server.

CPython's cyclic collector runs a young-generation pass every 700 net allocations and, every
hundred of those, a full pass over every object the process holds. A worker holds about
280,000 objects after start-up (Django, the models, the SDKs, the compiled prompts and
schemas), none of which ever become garbage, and a pipeline run allocates many short-lived
ones (query results, spans, request and response dicts). Measured in a worker of the
production set-up (bench/runtime_throughput.py, issue 29): 1.8 to 2.3 s of 5.9 to 6.6 s of
CPU went to the collector, 3 of whose passes were full ones over those objects.

`gc_tune` is called once the process has loaded what it keeps (after the LLM provider is
built; in the web server after the URL patterns are loaded):

1. `gc.collect()` then `gc.freeze()`: everything alive then moves to the permanent
   generation, which no pass walks again (and, before a fork, is not written to by the
   collector, so the pages stay shared with the parent).
2. `gc.set_threshold(*GC_THRESHOLD)`: young passes every GC_THRESHOLD[0] net allocations
   instead of 700 (default 20,000: a pass over at most that many young objects, well under
   a millisecond), older generations as CPython does.

Cycles are still collected, only later: memory held by a cycle lives at most until the next
pass. GC_FREEZE=false and GC_THRESHOLD=700,10,10 restore CPython's defaults. The collector's
work is exported with the other process metrics (`python_gc_collections_total`,
`python_gc_objects_collected_total`).
"""

from __future__ import annotations

import gc
import logging

from django.conf import settings

log = logging.getLogger(__name__)


def gc_tune() -> dict:
    """Freeze what the process holds now and set the collector's thresholds from settings.
    Returns what was done (logged too)."""
    frozen = 0
    if settings.GC_FREEZE:
        gc.collect()
        gc.freeze()
        frozen = gc.get_freeze_count()
    gc.set_threshold(*settings.GC_THRESHOLD)
    done = {"frozen": frozen, "threshold": gc.get_threshold()}
    log.info("garbage collector: %s objects frozen, thresholds %s", f"{frozen:,}", done["threshold"])
    return done
