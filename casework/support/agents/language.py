"""Language detection for the offline translator: lingua (a maintained library that ships
its own n-gram models, so it needs no download or network), restricted to the languages
the desk supports, which keeps its memory and load time small. Built once per process."""

from __future__ import annotations

import threading

_detector = None
_lock = threading.Lock()

SUPPORTED = ("en", "es", "fr", "de", "pt", "it", "nl", "th", "ja", "zh", "ru")
# Fewer letters than this and the text is too short to tell (e.g. "ok", "thanks"): English.
MIN_LETTERS = 12


def _build():
    from lingua import IsoCode639_1, LanguageDetectorBuilder

    codes = [getattr(IsoCode639_1, code.upper()) for code in SUPPORTED]
    return LanguageDetectorBuilder.from_iso_codes_639_1(*codes).with_minimum_relative_distance(0.05).build()


def detector():
    global _detector
    if _detector is None:
        with _lock:
            if _detector is None:
                _detector = _build()
    return _detector


def detect_language(text: str) -> str:
    """ISO 639-1 code of the text's language; "en" when it is too short or undecidable."""
    letters = sum(ch.isalpha() for ch in text or "")
    if letters == 0:
        return "en"
    language = detector().detect_language_of(text)
    if language is None:
        return "en"
    code = language.iso_code_639_1.name.lower()
    # Short Latin-script text is guessed poorly; a non-Latin script is certain at any length.
    if letters < MIN_LETTERS and code not in ("th", "ja", "zh", "ru"):
        return "en"
    return code


def warm_up() -> None:
    """Build the detector and load its models now (once per process), when the offline
    provider will need them; a model provider never does."""
    from django.conf import settings

    if settings.LLM_PROVIDER == "offline":
        detect_language("Warming up the language models of this process.")
