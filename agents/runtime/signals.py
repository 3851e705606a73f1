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
# Sent with pause=<RunPause> once a run that stopped to wait for a person (an approval, a
# budget) has committed (agents.runtime.pause.pause_open): the layers above tell the assignee.
run_paused = Signal()
# Sent with pause=<RunPause> once the answer that queues the run again has committed.
run_resumed = Signal()
