from __future__ import annotations

from django.contrib import admin

from casework.cases.saved_views.models import SavedView


@admin.register(SavedView)
class SavedViewAdmin(admin.ModelAdmin):
    list_display = ["name", "owner", "team", "everyone", "pinned", "query", "updated_at"]
    list_filter = ["everyone", "pinned", "team"]
    search_fields = ["name", "owner__username", "query"]
    readonly_fields = ["owner", "created_at", "updated_at"]
