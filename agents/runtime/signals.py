"""What a run announces as it ends. The runtime sends these; the layers above it listen
(agents/signals.py: notifications, outgoing webhooks), so the runtime imports none of them."""

from __future__ import annotations

from django.dispatch import Signal

# Sent with run=<AgentRun> once a run that ended failed or timed out has committed
# (agents.runtime.pipeline._end).
run_failed = Signal()
# Sent with run=<AgentRun> inside the transaction that ends a run (any end state, waiting
# included), so what a receiver writes commits or rolls back with the run's end.
run_ended = Signal()
