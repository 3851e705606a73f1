"""Hooks case-type packages listen to; sent after the transaction commits."""

from __future__ import annotations

from django.dispatch import Signal

# Sent with case=<Case>, decision=<Decision>, actor=<user> once a close has committed.
case_closed = Signal()
