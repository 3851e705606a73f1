"""A typed client generated from the schema, as an API user would make one (openapi-python-client),
has every operation. A generator drops what it cannot read (a model whose default its own enum
refuses, two inline models of one name) with a warning and carries on; here that fails."""

from __future__ import annotations

import json
import subprocess
import sys

from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.renderers import OpenApiJsonRenderer

CONFIG = {
    # No ruff over the generated code: it is read here, not kept (and the run stays offline and fast).
    "post_hooks": [],
    # The generator reads JSON, text and application/octet-stream; a PDF (the case report, an
    # attachment) or a zip (a subject access export) is bytes to a client, which is what every
    # user of this generator configures.
    "content_type_overrides": {"application/pdf": "application/octet-stream",
                               "application/zip": "application/octet-stream"},
}


def test_a_generated_client_has_a_function_for_every_operation(tmp_path):
    schema = SchemaGenerator().get_schema(request=None, public=True)
    (tmp_path / "schema.json").write_bytes(OpenApiJsonRenderer().render(schema, renderer_context={}))
    (tmp_path / "config.json").write_text(json.dumps(CONFIG))
    out = tmp_path / "client"

    run = subprocess.run([sys.executable, "-m", "openapi_python_client", "generate", "--path", tmp_path / "schema.json", "--config",
                          tmp_path / "config.json", "--meta", "none", "--output-path", out, "--fail-on-warning"],
                         capture_output=True, text=True, timeout=120, cwd=tmp_path)

    report = run.stdout + run.stderr
    assert run.returncode == 0 and "WARNING" not in report, report
    operation_ids = {operation["operationId"] for item in schema["paths"].values()
                     for method, operation in item.items() if method in {"get", "post", "put", "patch", "delete"}}
    modules = {module.stem for module in out.glob("api/*/*.py")} - {"__init__"}
    assert modules == operation_ids
