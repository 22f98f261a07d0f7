"""`GET /openapi.json`: the API server's OpenAPI document names every route of the app and no
other, is served to any valid key (and to no request without one), and holds up against a
schema-based fuzzer (schemathesis) run against a real `hermes serve`: no 5xx, every answer with a
documented status, content type and shape."""

from __future__ import annotations

import os
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from hermes_core import PluginManager
from hermes_core.api_server import ApiServer
from hermes_core.api_server.openapi import OPERATIONS, document
from tests.helpers import llm_config
from tests.helpers.api_server import KEY, Serve, call

# Bounded: a few examples per operation (and a fixed seed, so that a run is repeatable) keeps the
# fuzzer's run well under a minute on a loaded machine.
MAX_EXAMPLES = 10
# No 5xx; every answer's status, content type and body as documented. Not checked: that each request
# the schema allows is accepted and each it forbids refused; the schema is looser than the server on
# purpose (it cannot say "the last message must be the user's"), and the server ignores what it does
# not read, as OpenAI's does.
CHECKS = ("not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance,"
          "unsupported_method,allow_header_conformance")


@pytest.fixture
def served(home: Path, llm_server, monkeypatch: pytest.MonkeyPatch) -> Iterator[Serve]:
    llm_server.always("ok")
    llm_config(home, llm_server.url, "api_server:\n  keys:\n    reports:\n      key_env: REPORTS_KEY\n"
                                     "      endpoints: [chat]\n")
    monkeypatch.setenv("API_SERVER_KEY", KEY)
    monkeypatch.setenv("REPORTS_KEY", "reports-key-0123456789abcdef")
    with Serve() as server:
        yield server


def _app_routes(home: Path) -> set[tuple[str, str]]:
    server = ApiServer(PluginManager(home=home))
    try:
        app = server.app()
        return {(method, route.path) for route in app.routes for method in route.methods - {"HEAD"}}
    finally:
        server.close()


def test_the_document_names_every_route_of_the_app_and_no_other(home: Path) -> None:
    routes = _app_routes(home)
    assert set(OPERATIONS) == routes
    server = ApiServer(PluginManager(home=home))
    try:
        server.app()
        documented = {(method.upper(), path) for path, item in server.openapi["paths"].items() for method in item}
    finally:
        server.close()
    assert documented == routes
    assert {"/v1/chat/completions", "/v1/responses", "/v1/models", "/v1/runs/{run_id}/events",
            "/v1/runs/{run_id}/stop", "/api/sessions/{session_id}/chat", "/api/jobs/{job_id}", "/health",
            "/openapi.json"} <= {path for _, path in routes}


def test_a_route_with_no_operation_stops_the_document(home: Path) -> None:
    from starlette.routing import Route

    with pytest.raises(LookupError, match="POST /v1/new has no OpenAPI operation: add it to OPERATIONS"):
        document([Route("/v1/new", lambda request: None, methods=["POST"])], {}, version="0", model="m")


def test_any_valid_key_reads_the_document_and_no_key_does_not(served: Serve) -> None:
    status, document, _ = call(f"{served.root}/openapi.json")
    assert status == 200 and document["openapi"].startswith("3.1")
    chat = document["paths"]["/v1/chat/completions"]["post"]
    assert chat["requestBody"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/ChatCompletionRequest"}
    assert chat["x-hermes-endpoints"] == "chat" and document["paths"]["/health"]["get"]["security"] == []
    # a named key allowed only chat still reads the document, as it reads /v1/capabilities
    assert call(f"{served.root}/openapi.json", key="reports-key-0123456789abcdef")[0] == 200
    status, body, _ = call(f"{served.root}/openapi.json", key=None)
    assert status == 401 and body["error"]["code"] == "invalid_api_key"


def test_a_method_a_path_does_not_take_gets_405_naming_every_method_it_takes(served: Serve) -> None:
    for path, allowed in (("/api/jobs", "GET, HEAD, POST"), ("/v1/responses/resp_x", "DELETE, GET, HEAD"),
                          ("/api/jobs/0123456789ab", "DELETE, GET, HEAD, PATCH")):
        request = urllib.request.Request(f"{served.root}{path}", method="PUT",
                                         headers={"Authorization": f"Bearer {KEY}"})
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=30)
        with refused.value as error:
            assert error.code == 405 and sorted(error.headers["Allow"].split(", ")) == allowed.split(", ")


def test_a_schema_fuzzer_finds_no_server_error_and_no_undocumented_answer(served: Serve, llm_server,
                                                                          tmp_path: Path) -> None:
    env = {**os.environ, "NO_COLOR": "1"}
    command = [str(Path(sys.executable).parent / "schemathesis"), "run", f"{served.root}/openapi.json",
               "--url", served.root, "-H", f"Authorization: Bearer {KEY}", "--checks", CHECKS,
               "--max-examples", str(MAX_EXAMPLES), "--workers", "1", "--seed", "1", "--no-shrink",
               "--phases", "examples,coverage,fuzzing,stateful", "--generation-database", "none",
               "--request-timeout", "30", "--suppress-health-check", "all"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stdout[-8000:] + done.stderr[-2000:]
    assert llm_server.requests, "no generated request reached the agent"  # the examples' turns did
