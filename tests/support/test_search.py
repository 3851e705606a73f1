"""KB search: the same interface and scores on PostgreSQL (full-text, GIN) and SQLite."""

from __future__ import annotations

import pytest
from django.db import connection

from casework.support.models import KBArticle
from casework.support.search import kb_search, query_terms

pytestmark = pytest.mark.django_db


def test_title_hits_rank_above_body_hits_within_the_category(support_data):
    hits = kb_search("refund", category="billing")
    assert [h.article_id for h in hits][:2] == ["kb_003", "kb_001"]  # title, then body
    assert all(h.category == "billing" for h in hits)
    assert 0 < hits[1].score < hits[0].score <= 1


def test_plural_and_inflected_words_match(support_data):
    assert "kb_001" in [h.article_id for h in kb_search("charges refunded", category="billing")]


def test_nothing_to_search_for_finds_nothing(support_data):
    assert kb_search("", category="billing") == []
    assert kb_search("how do I the", category="billing") == []  # stop-words only
    assert kb_search("zzzz qqqq", category="billing") == []


def test_operators_and_quotes_in_a_query_are_just_words(support_data):
    assert [h.article_id for h in kb_search("'invoice' & !download | <b>", category="billing")][0] == "kb_002"
    assert query_terms("Hello, the INVOICE!! invoice") == ["invoice"]


def test_each_hit_has_the_shape_the_tool_returns(support_data):
    (hit, *_) = kb_search("download invoice", category="billing")
    assert set(hit.as_dict()) == {"id", "title", "category", "score", "snippet"}


@pytest.mark.skipif(connection.vendor != "postgresql", reason="the tsvector and its GIN index are PostgreSQL's")
def test_postgresql_keeps_a_search_vector_under_a_gin_index(support_data):
    assert not KBArticle.objects.filter(search_vector__isnull=True).exists()
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname = 'support_kbarticle_search_gin'")
        (definition,) = cursor.fetchone()
    assert "USING gin (search_vector)" in definition
