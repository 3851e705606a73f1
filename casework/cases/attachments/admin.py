from __future__ import annotations

from django.contrib import admin

from audit.admin_scope import CaseScopedAdmin
from casework.cases.attachments.models import Attachment


@admin.register(Attachment)
class AttachmentAdmin(CaseScopedAdmin, admin.ModelAdmin):
    """Read-only, and no file link: evidence is read through the case page's checked download."""

    list_display = ("case", "original_name", "size", "sha256", "content_type", "uploaded_by", "uploaded_at")
    search_fields = ("case__reference", "original_name", "sha256")
    list_select_related = ("case", "uploaded_by")
    exclude = ("file",)
    readonly_fields = [f.name for f in Attachment._meta.fields if f.name != "file"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
