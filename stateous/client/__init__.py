"""The Python client of the control plane (HTTP only): `Client` and its errors."""

from stateous.client.client import Client
from stateous.client.errors import ClientError, NotFound, Refused, Unreachable

__all__ = ["Client", "ClientError", "NotFound", "Refused", "Unreachable"]
