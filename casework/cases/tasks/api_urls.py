from __future__ import annotations

from django.urls import path

from casework.cases.tasks import api

urlpatterns = [
    path("cases/<str:reference>/tasks/", api.TaskListApi.as_view(), name="api-case-tasks"),
    path("cases/<str:reference>/tasks/from-template/", api.TaskFromTemplateApi.as_view(),
         name="api-case-tasks-from-template"),
    path("cases/<str:reference>/tasks/<int:pk>/done/", api.TaskDoneApi.as_view(), name="api-case-task-done"),
    path("cases/<str:reference>/tasks/<int:pk>/reopen/", api.TaskReopenApi.as_view(), name="api-case-task-reopen"),
    path("cases/<str:reference>/tasks/<int:pk>/assign/", api.TaskAssignApi.as_view(), name="api-case-task-assign"),
]
