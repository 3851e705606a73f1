from __future__ import annotations

from django.urls import path

from casework.cases.attachments import api

urlpatterns = [
    path("cases/<str:reference>/attachments/", api.AttachmentListApi.as_view(), name="api-case-attachments"),
    path("cases/<str:reference>/attachments/<int:pk>/download/", api.AttachmentDownloadApi.as_view(),
         name="api-case-attachment-download"),
]
