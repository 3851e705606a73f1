"""KB search: the same interface and scores on PostgreSQL (full-text, GIN) and SQLite."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

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


def test_each_engine_finds_the_candidates_its_own_way(support_data):
    """PostgreSQL matches in the database: every article keeps its search vector, under a GIN
    index that kb_search's query can use. SQLite has neither: kb_search reads the category's
    articles in one plain query and ranks them in Python. (The tests above expect the same hits,
    order and scores from both engines.)"""
    with CaptureQueriesContext(connection) as ctx:
        hits = kb_search("download invoice", category="billing")
    assert [h.article_id for h in hits] == ["kb_002", "kb_001"]
    (sql,) = [q["sql"] for q in ctx.captured_queries]

    if connection.vendor == "postgresql":
        assert not KBArticle.objects.filter(search_vector__isnull=True).exists()
        with connection.cursor() as cursor:
            cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname = 'support_kbarticle_search_gin'")
            (definition,) = cursor.fetchone()
            assert "USING gin (search_vector)" in definition
            # Six articles are read faster without an index; with sequential scans off, the plan
            # shows whether the index can serve kb_search's query at all.
            cursor.execute("SET LOCAL enable_seqscan = off")  # until the test's transaction ends
            cursor.execute(f"EXPLAIN {sql}")
            plan = "\n".join(row[0] for row in cursor.fetchall())
        assert "support_kbarticle_search_gin" in plan, plan
    else:
        assert """FROM "support_kbarticle" WHERE "support_kbarticle"."category" = 'billing' ORDER BY""" in sql, sql
