"""The roles' route table (stateous.control.api.roles): every route of the app has its
line, each role passes exactly the routes of its list, and a refusal names the token's scope."""

from __future__ import annotations

import pytest
from litestar.routes import HTTPRoute

from stateous.control.api.app import create_app
from stateous.control.api.roles import ROUTES, Need, allows, check_route, need_of
from stateous.control.errors import Refusal
from stateous.model.auth import ROLES, Grant, Role


def app_routes() -> set[tuple[str, str]]:
    app = create_app(None)  # type: ignore[arg-type]  # the routes only; no request is served
    return {
        (method, route.path_format)
        for route in app.routes
        if isinstance(route, HTTPRoute)
        for handler in route.route_handlers
        for method in handler.http_methods
        if method != "OPTIONS"
    }


def test_every_route_of_the_app_has_a_line_in_the_table() -> None:
    routes = app_routes()
    assert routes - ROUTES.keys() == set()
    # The table names no route the app lacks but the schedules' routes.
    assert {r for r in ROUTES.keys() - routes if not r[1].startswith("/schedules")} == set()


#: The roles' documented lists (docs/security.md), route by route: which roles may call it.
EVERYONE: set[Role] = {"read", "operate", "supervise", "admin"}
EXPECTED: list[tuple[str, str, set[Role]]] = [
    ("GET", "/tokens", {"read", "operate", "admin"}),
    ("GET", "/tokens/batch", {"read", "operate", "admin"}),
    ("GET", "/tokens/{token_id}/history", {"read", "operate", "admin"}),
    ("GET", "/metrics", {"read", "operate", "admin"}),
    ("GET", "/export", {"read", "operate", "admin"}),
    ("GET", "/schedules", {"read", "operate", "admin"}),
    ("GET", "/schema/openapi.json", {"read", "operate", "admin"}),
    ("GET", "/a-get-added-later", {"read", "operate", "admin"}),
    ("GET", "/workflow", EVERYONE),
    ("GET", "/workflow/versions", EVERYONE),
    ("GET", "/health", EVERYONE),
    ("POST", "/tokens", {"operate", "admin"}),
    ("POST", "/tokens/batch", {"operate", "admin"}),
    ("POST", "/tokens/{token_id}/events/{event}", {"operate", "admin"}),
    ("POST", "/tokens/{token_id}/cancel", {"operate", "admin"}),
    ("POST", "/tokens/{token_id}/migrate", {"operate", "admin"}),
    ("POST", "/bulk", {"operate", "admin"}),
    ("POST", "/bulk/{job}/stop", {"operate", "admin"}),
    ("POST", "/prune", {"operate", "admin"}),
    ("POST", "/schedules", {"operate", "admin"}),
    ("PUT", "/schedules/{name}", {"operate", "admin"}),
    ("DELETE", "/schedules/{name}", {"operate", "admin"}),
    ("POST", "/tasks/claim", {"supervise", "admin"}),
    ("POST", "/tasks/heartbeat", {"supervise", "admin"}),
    ("POST", "/tasks/messages", {"supervise", "admin"}),
    ("POST", "/tasks/{task}/note", {"supervise", "admin"}),
    ("PUT", "/tasks/{task}/memory", {"supervise", "admin"}),
    ("POST", "/supervisors/beat", {"supervise", "admin"}),
    ("POST", "/tasks/{task}/report", {"operate", "supervise", "admin"}),
    ("POST", "/a-write-added-later", {"admin"}),
]


@pytest.mark.parametrize(("method", "template", "roles"), EXPECTED)
def test_each_role_passes_the_routes_of_its_list(
    method: str, template: str, roles: set[Role]
) -> None:
    assert {role for role in ROLES if allows(role, need_of(method, template))} == roles


def test_a_report_by_an_operate_token_is_checked_on_its_body() -> None:
    assert need_of("POST", "/tasks/{task}/report") is Need.REPORT
    assert check_route(Grant("ops", "operate"), "POST", "/tasks/{task}/report") is True
    assert check_route(Grant("box", "supervise"), "POST", "/tasks/{task}/report") is False
    assert check_route(Grant("boss", "admin"), "POST", "/tasks/{task}/report") is False
    assert check_route(None, "POST", "/tasks/{task}/report") is False  # no authentication


@pytest.mark.parametrize(
    ("grant", "method", "template", "sentence"),
    [
        (Grant("viewer", "read"), "POST", "/tokens", "the token 'viewer' may only read"),
        (Grant(None, "read"), "POST", "/tokens", "this token may only read"),
        (
            Grant("ops", "operate"),
            "POST",
            "/tasks/claim",
            "the token 'ops' may only read and operate, not supervise",
        ),
        (
            Grant("worker", "supervise"),
            "GET",
            "/tokens",
            "the token 'worker' may only supervise and read the workflow",
        ),
    ],
)
def test_a_request_outside_its_role_is_403_forbidden(
    grant: Grant, method: str, template: str, sentence: str
) -> None:
    with pytest.raises(Refusal) as refused:
        check_route(grant, method, template)
    assert (refused.value.status, refused.value.code, refused.value.message) == (
        403,
        "forbidden",
        sentence,
    )
