"""The Python clients of the control plane (HTTP only): `Client`, `AsyncClient` and their errors."""

from stateous.client.async_client import AsyncClient
from stateous.client.client import Client
from stateous.client.errors import ClientError, NotFound, Refused, Unreachable
from stateous.client.pages import Page

__all__ = ["AsyncClient", "Client", "ClientError", "NotFound", "Page", "Refused", "Unreachable"]
