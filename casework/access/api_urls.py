from __future__ import annotations

from django.urls import path

from casework.access import api

urlpatterns = [
    path("access/mutations/", api.MutationSubmitApi.as_view(), name="api-access-mutation-submit"),
    path("access/mutations/<str:reference>/", api.MutationDetailApi.as_view(), name="api-access-mutation-detail"),
    path("access/answers/employee/", api.EmployeeAnswerApi.as_view(), name="api-access-employee-answer"),
    path("access/inbox/", api.ManagerInboxApi.as_view(), name="api-access-inbox"),
    path("access/requests/<int:pk>/answer/", api.ManagerAnswerApi.as_view(), name="api-access-manager-answer"),
]
