"""The seed's rules as plain functions, for the offline analysts (no Django, no database).

Keyword classes recognise what a message is about in English and, for the commonest
words, in Spanish, French, German and Portuguese (a model does this for any language; the
offline analysts say when they could not read a message). A keyword matches as a whole word
or phrase; a single English word also in its usual inflections ("crash": crashes, crashed,
crashing), never inside another word. The urgency table is the seed's, security first; an
unlisted combination is medium.
"""

from __future__ import annotations

import re
import unicodedata

KEYWORD_CLASSES: dict[str, tuple[str, ...]] = {
    "security": (
        "hacked", "hack", "breach", "unauthorized", "unauthorised", "phishing", "compromised", "stolen",
        "suspicious login", "security", "leaked", "someone else logged", "2fa bypass", "malware",
        "without authorization", "without authorisation", "without permission", "accessed our account",
        "seguridad", "hackeado", "sécurité", "piraté", "sicherheit", "gehackt", "segurança", "invadida",
    ),
    "outage": (
        "outage", "is down", "went down", "all users", "nobody can", "data loss", "lost data", "lost all",
        "deleted all", "data is gone", "disappeared", "503", "500 error", "production down",
        "caída", "perdimos", "panne", "perte de données", "ausfall", "datenverlust", "fora do ar",
    ),
    "billing_error": (
        "charged twice", "double charge", "double-charged", "overcharged", "wrong amount", "incorrect charge",
        "billing error", "billed twice", "invoice is wrong", "wrong invoice", "duplicate charge",
        "cobraron dos veces", "cobro doble", "cobro duplicado", "facturé deux fois", "double facturation",
        "doppelt abgebucht", "falsche rechnung", "cobrado duas vezes", "cobrança duplicada",
    ),
    "disruption": (
        "not working", "stopped working", "doesn't work", "does not work", "can't log in", "cannot log in",
        "unable to", "crash", "crashes", "error", "broken", "fails", "failing", "timeout", "slow", "sync",
        "can't work", "cannot work", "can not work", "unable to work", "blocked", "blocking", "unusable", "freeze",
        "freezes", "frozen", "hangs", "won't load", "won't open", "won't start", "halted", "standstill",
        "no funciona", "no puedo", "ne fonctionne pas", "je ne peux pas", "funktioniert nicht", "fehler",
        "não funciona", "não consigo",
    ),
    "billing": (
        "charge", "charged", "invoice", "refund", "payment", "billing", "bill", "subscription", "price",
        "pricing", "receipt", "credit card", "vat", "plan upgrade", "downgrade", "cancel my",
        "factura", "cobro", "reembolso", "pago", "suscripción", "facture", "remboursement", "paiement",
        "abonnement", "rechnung", "erstattung", "zahlung", "fatura", "reembolso", "pagamento", "assinatura",
    ),
    "technical": (
        "api", "login", "log in", "password", "error", "crash", "bug", "integration", "export", "import",
        "upload", "sync", "webhook", "sso", "single sign-on", "mobile app", "install", "browser", "outage", "timeout", "2fa",
        "contraseña", "mot de passe", "passwort", "senha", "aplicación", "application",
    ),
    "question": (
        "how do i", "how can i", "how to", "where can i", "where do i", "is it possible", "can i", "what is",
        "question", "wondering", "does your", "do you support",
        "cómo", "como puedo", "dónde", "comment", "où", "est-ce que", "wie kann", "wo finde", "kann ich",
        "como faço", "onde",
    ),
    "legal": ("lawyer", "legal action", "sue", "court", "gdpr complaint", "lawsuit", "attorney", "solicitor",
              "litigation", "legal department", "legal team", "abogado", "avocat", "anwalt", "advogado"),
    "privacy": ("gdpr", "privacy", "personal data", "data protection", "right to be forgotten", "data subject",
                "subject access request", "delete my data", "erase my data", "ccpa", "rgpd", "lgpd", "dsgvo",
                "datenschutz", "protección de datos", "données personnelles", "dados pessoais"),
    "angry": ("unacceptable", "ridiculous", "terrible", "worst", "furious", "angry", "!!!", "again and again",
              "inaceptable", "inadmissible", "unverschämt", "inaceitável"),
}


# Sensitive matters go to a person whatever a model recommends (seed 001: escalate_human for
# "a sensitive matter"); a ticket about any of COMPLEX is not a simple question, so it is never
# answered automatically ("auto_respond: simple question with clear KB answer").
SENSITIVE = ("security", "legal", "privacy")
COMPLEX = ("disruption", "outage", "billing_error", *SENSITIVE)
_INFLECTIONS = "(?:s|es|ed|d|ing)?"


def normalise(text: str) -> str:
    return unicodedata.normalize("NFC", (text or "").lower()).replace("\u2019", "'")


def _keyword_pattern(word: str) -> str:
    if not word[0].isalnum():
        return re.escape(word)
    inflected = _INFLECTIONS if word.isascii() and word.isalpha() else ""
    return r"(?<!\w)" + re.escape(word) + inflected + r"(?!\w)"


_KEYWORD_PATTERNS = {name: re.compile("|".join(_keyword_pattern(w) for w in words))
                     for name, words in KEYWORD_CLASSES.items()}


def keyword_classes(text: str) -> set[str]:
    text = normalise(text)
    return {name for name, pattern in _KEYWORD_PATTERNS.items() if pattern.search(text)}


def sensitive_matters(classes: set[str]) -> list[str]:
    return [name for name in SENSITIVE if name in classes]


def is_simple_question(classes: set[str]) -> bool:
    """A question with nothing broken, wrongly billed or sensitive in it."""
    return "question" in classes and not classes & set(COMPLEX)


def urgency_for(plan: str, classes: set[str]) -> tuple[str, str]:
    """(urgency, the table row that decided it)."""
    if "security" in classes:
        return "critical", "Any plan + security concern"
    if plan == "enterprise" and "outage" in classes:
        return "critical", "Enterprise + outage/data loss"
    if plan == "enterprise" and "billing_error" in classes:
        return "high", "Enterprise + billing error"
    if plan == "pro" and classes & {"disruption", "outage"}:
        return "high", "Pro + service disruption"
    if plan == "free" and "question" in classes and not classes & {"disruption", "outage", "billing_error"}:
        return "low", "Free + general question"
    return "medium", "No row of the table applies"


def ticket_type_for(classes: set[str]) -> str:
    """A billing error is billing; something broken is technical even when it mentions an
    invoice or a receipt; then the subject's words decide."""
    if "billing_error" in classes:
        return "billing"
    if classes & {"security", "outage", "disruption"}:
        return "technical"
    if "billing" in classes:
        return "billing"
    if "technical" in classes:
        return "technical"
    return "general"


def sentiment_for(classes: set[str]) -> str:
    if "legal" in classes or "angry" in classes:
        return "angry"
    if classes & {"security", "outage"}:
        return "urgent"
    if classes & {"billing_error", "disruption"}:
        return "frustrated"
    if "question" in classes:
        return "curious"
    return "neutral"


def issue_type_for(classes: set[str], ticket_type: str) -> str:
    for name, issue in (("security", "security_concern"), ("outage", "outage_or_data_loss"),
                        ("billing_error", "billing_error"), ("disruption", "service_disruption"),
                        ("question", "how_to_question")):
        if name in classes:
            return issue
    return f"{ticket_type}_request"


# Search terms a keyword class adds to a specialist's kb_search query, so that a message the
# offline provider cannot translate still finds the English articles on its subject.
SEARCH_TERMS = {
    "security": "security account compromised password",
    "outage": "outage status incident data",
    "billing_error": "double charge refund invoice",
    "billing": "billing invoice payment",
    "disruption": "troubleshooting error login",
    "technical": "troubleshooting",
}

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_STOP = frozenset("""a an and are as at be been but by can could did do does for from had has have how i if in into is
it its me my no not of on or our please so than that the their them then there these they this to was we were what
when where which who why will with would you your hi hello thanks thank regards dear still also again any
""".split())


def content_words(text: str) -> set[str]:
    return {w for w in _WORD.findall(normalise(text)) if len(w) > 2 and w not in _STOP}


def match_score(message: str, summary: str) -> float:
    """How much of the new message's vocabulary the ticket's summary shares (0..1)."""
    new, old = content_words(message), content_words(summary)
    if not new or not old:
        return 0.0
    return len(new & old) / min(len(new), len(old))
