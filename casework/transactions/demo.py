"""Placeholder; replaced by the real demo loader."""

from __future__ import annotations


def demo_load_transactions(*, users: dict) -> int:
    return 0
