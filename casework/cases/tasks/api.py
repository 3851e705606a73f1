"""Tasks API: a case's checklist, one view per operation (list and create share a path)."""

from __future__ import annotations

from django.contrib.auth.models import User
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema, extend_schema_serializer
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from casework.cases.api import IsInvestigator
from casework.cases.selectors import case_get_for_user
from casework.cases.tasks import selectors, services
from casework.cases.tasks.models import TITLE_MAX_LENGTH, Task


class TaskOutputSerializer(serializers.ModelSerializer):
    assignee = serializers.CharField(source="assignee.username", default=None, allow_null=True)
    done_by = serializers.CharField(source="done_by.username", default=None, allow_null=True)
    created_by = serializers.CharField(source="created_by.username", default=None, allow_null=True)

    class Meta:
        model = Task
        ref_name = "CaseTask"
        fields = ["id", "position", "title", "assignee", "due_on", "done", "done_by", "done_at", "created_by",
                  "created_at", "template_key"]


# The Error body comes from casework.api_schema.document_errors, as for every status.
CASE_CLOSED = OpenApiResponse(description="The case is closed; its tasks no longer change (`case_closed`).")


def _user(value):
    if value is None:
        return None
    user = User.objects.filter(username=value).first()
    if user is None:
        raise serializers.ValidationError(f"No user named {value!r}.")
    return user


class TaskListApi(APIView):
    """GET: the case's tasks in checklist order. POST: add one."""

    permission_classes = [IsInvestigator]

    @extend_schema_serializer(component_name="CaseTaskInput")
    class InputSerializer(serializers.Serializer):
        title = serializers.CharField(max_length=TITLE_MAX_LENGTH)
        assignee = serializers.CharField(required=False, allow_null=True, default=None,
                                         help_text="Username of an investigator.")
        due_on = serializers.DateField(required=False, allow_null=True, default=None)

        def validate_assignee(self, value):
            return _user(value)

    @extend_schema(operation_id="case_tasks_list", responses=TaskOutputSerializer(many=True))
    def get(self, request, reference: str):
        case = case_get_for_user(request.user, reference)
        return Response(TaskOutputSerializer(selectors.task_list(case), many=True).data)

    @extend_schema(operation_id="case_tasks_create", request=InputSerializer, responses={201: TaskOutputSerializer},
                   description="Add a task to the case's checklist. A closed case's tasks answer 409.",
                   examples=[OpenApiExample("Task", value={"title": "Call the customer", "assignee": "alice",
                                                           "due_on": "2026-12-01"}, request_only=True)])
    def post(self, request, reference: str):
        case = case_get_for_user(request.user, reference)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        task = services.task_create(actor=request.user, case=case, **data.validated_data)
        return Response(TaskOutputSerializer(task).data, status=status.HTTP_201_CREATED)


class TaskFromTemplateApi(APIView):
    permission_classes = [IsInvestigator]

    @extend_schema(operation_id="case_tasks_from_template", request=None,
                   responses={201: TaskOutputSerializer(many=True), 409: CASE_CLOSED},
                   description="Add the case type's checklist lines the case does not have yet; answers the "
                               "tasks added (none when every line is there).")
    def post(self, request, reference: str):
        case = case_get_for_user(request.user, reference)
        tasks = services.task_add_from_template(actor=request.user, case=case)
        return Response(TaskOutputSerializer(tasks, many=True).data, status=status.HTTP_201_CREATED)


class TaskDoneApi(APIView):
    permission_classes = [IsInvestigator]

    @extend_schema(operation_id="case_tasks_done", request=None,
                   responses={200: TaskOutputSerializer, 409: OpenApiResponse(
                       description="The task is already done (`task_done`, naming who did it and when), or the "
                                   "case is closed (`case_closed`).")},
                   description="Mark the task done by the caller. A task already done answers 409 naming who did it.")
    def post(self, request, reference: str, pk: int):
        task = selectors.task_get(case_get_for_user(request.user, reference), pk)
        return Response(TaskOutputSerializer(services.task_complete(actor=request.user, task=task)).data)


class TaskReopenApi(APIView):
    permission_classes = [IsInvestigator]

    @extend_schema(operation_id="case_tasks_reopen", request=None,
                   responses={200: TaskOutputSerializer, 409: OpenApiResponse(
                       description="The task is not done (`task_open`), or the case is closed (`case_closed`).")},
                   description="Mark a done task undone. A task that is not done answers 409.")
    def post(self, request, reference: str, pk: int):
        task = selectors.task_get(case_get_for_user(request.user, reference), pk)
        return Response(TaskOutputSerializer(services.task_reopen(actor=request.user, task=task)).data)


class TaskAssignApi(APIView):
    permission_classes = [IsInvestigator]

    @extend_schema_serializer(component_name="CaseTaskAssignInput")
    class InputSerializer(serializers.Serializer):
        assignee = serializers.CharField(allow_null=True, help_text="Username of an investigator, or null.")

        def validate_assignee(self, value):
            return _user(value)

    @extend_schema(operation_id="case_tasks_assign", request=InputSerializer, responses=TaskOutputSerializer,
                   examples=[OpenApiExample("Assign", value={"assignee": "alice"}, request_only=True)])
    def post(self, request, reference: str, pk: int):
        task = selectors.task_get(case_get_for_user(request.user, reference), pk)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        task = services.task_assign(actor=request.user, task=task, assignee=data.validated_data["assignee"])
        return Response(TaskOutputSerializer(task).data)
