"""Conversations are read here (each is audited too); only the case page and the API write them."""

from __future__ import annotations

from django.contrib import admin

from agents.chat.models import ChatMessage, Conversation
from audit.admin_scope import CaseScopedAdmin


class ChatMessageInline(admin.TabularInline):
    model = ChatMessage
    extra = 0
    fields = ["role", "content", "provider", "model", "window_tokens", "budget_tokens", "error", "created_at"]
    readonly_fields = fields

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(Conversation)
class ConversationAdmin(CaseScopedAdmin, admin.ModelAdmin):
    list_display = ["id", "case", "user", "is_open", "created_at"]
    list_filter = ["is_open"]
    search_fields = ["case__reference", "user__username"]
    list_select_related = ["case", "user"]
    inlines = [ChatMessageInline]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
