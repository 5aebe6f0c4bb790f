"""The CLI's unit tests reuse the client's scripted server on a real socket."""

from tests.unit.client.conftest import server

__all__ = ["server"]
