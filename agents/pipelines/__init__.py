"""One module per case type: which agents run, in what order, on what input."""

from __future__ import annotations

import importlib
import logging
import pkgutil

logger = logging.getLogger(__name__)
_loaded = False


def load_all() -> None:
    """Import every pipeline module once (they register pipelines and offline analysts)."""
    global _loaded
    if _loaded:
        return
    for module in pkgutil.iter_modules(__path__):
        try:
            importlib.import_module(f"{__name__}.{module.name}")
        except Exception:  # noqa: BLE001 - one broken pipeline must not stop the others' runs
            logger.exception("Pipeline module %s failed to import; its runs will fail.", module.name)
    _loaded = True
