"""The OpenAPI document at `GET /schema/openapi.json` (every route, body, answer and refusal), and a
schemathesis run against a live `serve`: no 500 answer, and every answer matching the documented
shape."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support import ServeProcess, serve_process, sqlite_url

ROOT = Path(__file__).resolve().parents[2]
SDLC = ROOT / "examples" / "sdlc" / "build" / "sdlc.json"
ROUTES = {
    ("post", "/tokens"), ("get", "/tokens"), ("get", "/tokens/{token_id}"),
    ("get", "/tokens/{token_id}/history"), ("post", "/tokens/{token_id}/events/{event}"),
    ("post", "/tokens/{token_id}/pause"), ("post", "/tokens/{token_id}/resume"),
    ("post", "/tokens/{token_id}/cancel"), ("get", "/workflow"), ("get", "/health"),
    ("post", "/tasks/claim"), ("post", "/tasks/heartbeat"), ("post", "/tasks/{task}/report"),
    ("post", "/tasks/{task}/note"), ("put", "/tasks/{task}/memory"),
    ("get", "/tasks"), ("get", "/tokens/{token_id}/tasks"), ("get", "/tokens/{token_id}/timers"),
    ("get", "/tokens/{token_id}/memory"), ("get", "/stats"), ("get", "/metrics"),
    ("post", "/tasks/messages"), ("post", "/tokens/batch"),
    ("post", "/supervisors/beat"), ("get", "/supervisors"), ("get", "/inbox"),
    ("post", "/tokens/{token_id}/retry"), ("post", "/tokens/{token_id}/move"),
    ("get", "/tokens/{token_id}/why"), ("get", "/control-planes"),
    ("get", "/audit"), ("post", "/bulk"), ("get", "/bulk"), ("get", "/bulk/{job}"),
    ("post", "/bulk/{job}/stop"), ("get", "/workflow/versions"),
    ("post", "/tokens/{token_id}/migrate"), ("get", "/export"), ("post", "/prune"),
    ("post", "/import"),
    ("post", "/schedules"), ("get", "/schedules"), ("get", "/schedules/{name}"),
    ("put", "/schedules/{name}"), ("post", "/schedules/{name}/pause"),
    ("post", "/schedules/{name}/resume"), ("delete", "/schedules/{name}"),
}  # fmt: skip
BODIES = {
    "/tokens": "StartBody", "/tokens/{token_id}/events/{event}": "FireBody",
    "/tasks/claim": "ClaimBody", "/tasks/heartbeat": "HeartbeatBody",
    "/tasks/{task}/report": "ReportBody", "/tasks/{task}/note": "NoteBody",
    "/tasks/{task}/memory": "MemoryBody", "/tasks/messages": "MessagesBody",
    "/tokens/batch": "StartsBody", "/supervisors/beat": "BeatBody",
    "/tokens/{token_id}/retry": "RetryBody", "/tokens/{token_id}/move": "MoveBody",
    "/bulk": "BulkBody", "/tokens/{token_id}/cancel": "SteerBody",
    "/tokens/{token_id}/migrate": "MigrateBody", "/prune": "PruneBody", "/import": "ImportBody",
    "/schedules": "ScheduleBody",
}  # fmt: skip
#: Seconds of random bodies (schemathesis's fuzzing phase; about 90 cases a second here). The
#: coverage phase before it tries every field's boundary and invalid values whatever this is;
#: `STATEOUS_FUZZ_SECONDS=120` fuzzes longer (each second costs about a second of CPU).
FUZZ_SECONDS = int(os.environ.get("STATEOUS_FUZZ_SECONDS", "12"))
CHECKS = "not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    folder = tmp_path_factory.mktemp("openapi")
    with serve_process(SDLC, sqlite_url(folder), cwd=folder) as running:
        for n in range(3):
            httpx.post(f"{running.url}/tokens", json={"token": f"T-{n}", "context": {"repo": "r"}})
        yield running
    for pipe in (running.process.stdout, running.process.stderr):
        if pipe is not None:
            pipe.close()  # after the end: the reader thread holds stderr until then


def test_the_document_has_every_route_body_and_the_refusal_envelope(served: ServeProcess) -> None:
    answer = httpx.get(f"{served.url}/schema/openapi.json", timeout=10)
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("application/json")
    doc = answer.json()
    assert doc["openapi"].startswith("3.1")
    found = {(method, path) for path, item in doc["paths"].items() for method in item}
    assert found == ROUTES
    for path, model in BODIES.items():
        op = doc["paths"][path]["put" if path.endswith("/memory") else "post"]
        assert op["requestBody"]["content"]["application/json"]["schema"] == {
            "$ref": f"#/components/schemas/{model}"
        }
    refusal = doc["components"]["schemas"]["Refusal"]
    assert refusal["required"] == ["error", "code"]
    for item in doc["paths"].values():
        for op in item.values():
            for status in ("400", "401", "404", "405", "409", "413", "422", "500", "503"):
                schema = op["responses"][status]["content"]["application/json"]["schema"]
                assert schema == {"$ref": "#/components/schemas/Refusal"}
    token = doc["components"]["schemas"]["Token"]
    assert set(token["required"]) == {"token", "state", "status", "visit", "context", "entered_at"}
    fire = doc["paths"]["/tokens/{token_id}/events/{event}"]["post"]
    assert {"name": "Idempotency-Key", "in": "header"}.items() <= fire["parameters"][-1].items()


@pytest.mark.parametrize("path", ["/schema", "/schema/", "/schema/swagger", "/schema/openapi.yaml"])
def test_other_schema_paths_are_not_found(served: ServeProcess, path: str) -> None:
    answer = httpx.get(served.url + path, timeout=10)
    assert (answer.status_code, answer.json()["code"]) == (404, "not_found")


def test_the_document_takes_only_get(served: ServeProcess) -> None:
    answer = httpx.post(f"{served.url}/schema/openapi.json", timeout=10)
    assert answer.json() == {
        "error": "/schema/openapi.json does not take POST",
        "code": "method_not_allowed",
    }


def schemathesis(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    """`st run` on the live document with the shape checks, bounded and seeded."""
    st = shutil.which("st", path=str(Path(sys.executable).parent))
    if st is None:
        pytest.skip("schemathesis is not installed (pip install -e '.[dev]')")
    return subprocess.run(
        [st, "run", f"{url}/schema/openapi.json", "--checks", CHECKS, "--seed", "1",
         "--no-color", "--workers", "2", "--request-timeout", "70", *args],
        capture_output=True, text=True, timeout=240, check=False,
    )  # fmt: skip


def test_schemathesis_finds_no_500_and_no_shape_mismatch(served: ServeProcess) -> None:
    # The coverage phase: boundary and invalid values of every field of every route.
    covered = schemathesis(served.url, "--phases", "coverage", "--max-examples", "10")
    assert covered.returncode == 0, covered.stdout[-4000:]
    assert "47 passed" in covered.stdout
    # Random bodies too; a claim may long-poll up to 60 s, so claims stay in the coverage phase.
    fuzzed = schemathesis(
        served.url, "--phases", "fuzzing", "--max-examples", "15", "--max-time", str(FUZZ_SECONDS),
        "--exclude-path", "/tasks/claim",
    )  # fmt: skip
    assert fuzzed.returncode == 0, fuzzed.stdout[-4000:]
    assert not any("Traceback" in line for line in served.read_lines(0.2))
