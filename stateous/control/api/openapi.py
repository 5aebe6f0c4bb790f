"""The API's OpenAPI document at `GET /schema/openapi.json`: Litestar's generator,
completed on first request by stateous.control.api.openapi_document with the bodies and answers
of every route and the refusal envelope.
"""

from __future__ import annotations

from typing import Any

from litestar import MediaType, Request
from litestar.exceptions import NotFoundException
from litestar.openapi import OpenAPIConfig
from litestar.openapi.plugins import JsonRenderPlugin

__all__ = ["config", "only_the_document"]


def config() -> OpenAPIConfig:
    """Litestar's generator, serving the JSON document only, at `/schema/openapi.json`."""
    return OpenAPIConfig(
        title="Stateous control plane",
        version="1",
        description=(
            "The HTTP API of the Stateous control plane: tokens, tasks, the operator's routes "
            "and the refusal envelope."
        ),
        path="/schema",
        render_plugins=[JsonRenderPlugin(media_type=MediaType.JSON)],
    )


DOCUMENT_PATH = "/schema/openapi.json"


def only_the_document(request: Request[Any, Any, Any]) -> None:
    """Litestar's schema router also answers `/schema` and `/schema/*` (with HTML); this API has
    only the JSON document there, so every other such path is `404 not_found` like any other.

    The document is made when it is first asked for, not at start-up: generating it costs a
    tenth of a second of CPU that a control plane nobody asks for its schema never spends.
    """
    path = request.url.path
    if path == DOCUMENT_PATH:
        app = request.app
        if not app.state.get("documented"):
            from stateous.control.api.openapi_document import document

            document(app)
            app.state.documented = True
    elif path == "/schema" or path.startswith("/schema/"):
        raise NotFoundException()
