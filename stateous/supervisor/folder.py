"""A supervisor's folder: its `stateous.yaml`, its contract's checksum, and its routines.

Each problem is refused with one sentence (`FolderError`).
"""

from __future__ import annotations

import importlib.util
import re
import socket
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.parse import urlsplit

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from stateous.client.url import valid_host
from stateous.model.auth import AuthTokenError, read_token_file, token_from
from stateous.model.errors import StateousError
from stateous.model.versions import short
from stateous.supervisor.routine import StateRef, routine_state

__all__ = [
    "FolderError",
    "Registry",
    "RegistryError",
    "Settings",
    "load_routines",
    "read_folder",
    "url_problem",
]

_CHECKSUM_LINE = re.compile(r'^__checksum__ = "(sha256:[0-9a-f]{64})"$', re.MULTILINE)
_HOST_RULE = "a host has only letters, digits, '-' and '.', or is an IP address"
_INIT = "run `stateous init supervisor URL {folder}`"


class FolderError(StateousError):
    """The folder cannot run a supervisor; the message is the sentence after `error: `."""

    code = "invalid_folder"


class RegistryError(StateousError):
    """Two routines claim one state."""

    code = "registry"


@dataclass(frozen=True)
class Settings:
    """A supervisor's folder, read and checked."""

    folder: Path  # as given
    url: str  # without a trailing `/`
    tasks: int
    name: str
    checksum: str  # `__checksum__` of contract.py
    auth_token: str | None = None  # `auth_token_file:`, else STATEOUS_AUTH_TOKEN


class _Values(BaseModel):
    """The values of `stateous.yaml` other than `url`, checked by pydantic for its messages."""

    model_config = ConfigDict(extra="ignore")
    tasks: int = Field(default=4, ge=1, le=1000)
    name: str | None = Field(default=None, min_length=1, max_length=128)


def urls_of(url: object) -> list[object]:
    """The URLs of `url:`: a YAML list, or a string of URLs separated by commas."""
    if isinstance(url, list):
        return list(url) or [""]
    if isinstance(url, str) and "," in url:
        return [part.strip() for part in url.split(",") if part.strip()] or [url]
    return [url]


def url_problem(url: object) -> str | None:
    """Why `url` is not a control plane's address (the text after `url: `), or None."""
    text = str(url)
    try:
        parts = urlsplit(text)
    except ValueError as exc:
        return f"{text!r} is not a valid address: {_lower_first(str(exc))}"
    if not isinstance(url, str) or parts.scheme not in ("http", "https"):
        return f"{text!r} is not an http:// or https:// address"
    host_port = parts.netloc.rpartition("@")[2]
    port_text = host_port.rpartition("]")[2] if host_port.startswith("[") else host_port
    if ":" in port_text and port_text.rpartition(":")[2].isdigit():
        port = int(port_text.rpartition(":")[2])
        if not 1 <= port <= 65535:
            return f"{text!r} has the port {port}; a port is 1 to 65535"
    try:
        parts.port  # noqa: B018  # reading the port is what checks it
    except ValueError as exc:
        return f"{text!r} is not a valid address: {_lower_first(str(exc))}"
    if not parts.hostname:
        return f"{text!r} has no host"
    if not valid_host(parts.hostname):
        return f"{text!r} has a host that is not valid: {_HOST_RULE}"
    return None


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:]


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def read_folder(folder: Path) -> Settings:
    """Read and check `folder`; FolderError with the sentence on a problem."""
    if not folder.is_dir():
        raise FolderError(f"{folder} is not a folder")
    for name in ("contract.py", "stateous.yaml"):
        if not (folder / name).is_file():
            raise FolderError(f"{folder} has no {name}: {_INIT.format(folder=folder)}")
    try:
        contract = (folder / "contract.py").read_text(encoding="utf-8")
        raw = yaml.safe_load((folder / "stateous.yaml").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise FolderError(f"cannot read {folder}: {_one_line(exc)}") from None
    found = _CHECKSUM_LINE.search(contract)
    if found is None:
        raise FolderError(
            f"{folder}/contract.py has no __checksum__: {_INIT.format(folder=folder)} again"
        )
    values = _settings_values(folder, {} if raw is None else raw)
    return Settings(folder=folder, checksum=found.group(1), **values)


def _settings_values(folder: Path, raw: object) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise FolderError(f"cannot use {folder}/stateous.yaml: it is not a mapping of settings")
    problems: list[str] = []
    url = raw.get("url")
    if url is None:
        problems.append("url: missing")
    else:
        # Several control planes on one database: a list, or URLs with commas.
        urls = urls_of(url)
        problems += [f"url: {p}" for p in map(url_problem, urls) if p is not None]
        url = ", ".join(str(one).rstrip("/") for one in urls)
    values = _Values()
    try:
        values = _Values.model_validate({k: v for k, v in raw.items() if k in ("tasks", "name")})
    except ValidationError as exc:
        for error in exc.errors():
            problems.append(f"{error['loc'][0]}: {_lower_first(error['msg'])}")
    problems += [f"{key}: there is no such setting" for key in raw if key not in _KEYS]
    token, problem = _auth_token(folder, raw.get("auth_token_file"))
    problems += [problem] if problem else []
    if problems:
        raise FolderError(f"cannot use {folder}/stateous.yaml: {'; '.join(problems)}")
    return {
        "auth_token": token,
        "url": str(url).rstrip("/"),
        "tasks": values.tasks,
        "name": values.name if values.name is not None else socket.gethostname(),
    }


_KEYS = ("url", "tasks", "name", "auth_token_file")


def _auth_token(folder: Path, value: object) -> tuple[str | None, str | None]:
    """The bearer token and the problem with `auth_token_file`, if any.

    A relative path is read from the folder; without the key, STATEOUS_AUTH_TOKEN is used.
    """
    if value is None:
        return token_from(None), None
    if not isinstance(value, str) or not value.strip():
        return None, "auth_token_file: give the path of a file that holds the token"
    try:
        return read_token_file(folder / value), None
    except AuthTokenError as exc:
        return None, f"auth_token_file: {exc.message}"


# --- the routines -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Registry:
    """The routines of a folder: state name -> (state, function), in discovery order."""

    routines: dict[str, tuple[StateRef[Any], Callable[..., Any]]]

    @property
    def states(self) -> list[str]:
        """The served states, in discovery order."""
        return list(self.routines)


def _import_file(path: Path) -> ModuleType:
    """Import `path` as the top-level module of its stem, forgetting any module of that name."""
    name = path.stem
    known = sys.modules.get(name)
    if known is not None:
        origin = getattr(known, "__file__", None)
        if origin is not None and Path(origin).resolve() == path:
            return known  # a routine file imported it already, from this folder
        del sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def _load_problem(folder: Path, path: Path, exc: Exception) -> str:
    """The sentence of a routine file that does not load. A routine that names a state, an
    event or a model its folder's contract.py lacks was written for another version of the
    workflow (a copy from another folder, say, or a contract.py copied over): that is said,
    with the contract's version, instead of Python's AttributeError or ImportError."""
    missing = _missing_in_contract(exc)
    version = _contract_version(folder)
    if missing is None or version is None:
        return f"cannot load the routines in {folder}: {type(exc).__name__}: {exc}"
    kind, name = missing
    return (
        f"{path.name} names the {kind} {name!r}, which the folder's contract.py (version "
        f"{version}) does not have: the routine is for another version of the workflow; write "
        f"the contract of its version with `stateous init supervisor URL {folder}` (add "
        "`--checksum` for an older version)"
    )


#: What Python says of a name the contract lacks: `states.X`, `events.X`, `from contract import X`.
_NO_ATTRIBUTE = re.compile(r"^type object '(states|events)' has no attribute '([^']+)'$")
_NO_IMPORT = re.compile(r"^cannot import name '([^']+)' from 'contract'")


def _missing_in_contract(exc: Exception) -> tuple[str, str] | None:
    """(`state`, `event` or `name`, the name) when `exc` is a name the contract lacks."""
    if isinstance(exc, AttributeError):
        found = _NO_ATTRIBUTE.match(str(exc))
        if found is not None:
            return ("state" if found[1] == "states" else "event", found[2])
    if isinstance(exc, ImportError):
        found = _NO_IMPORT.match(str(exc))
        if found is not None:
            return ("name", found[1])
    return None


def _contract_version(folder: Path) -> str | None:
    """The 8 hex digits of the folder's contract.py's checksum (None when it has none)."""
    try:
        found = _CHECKSUM_LINE.search((folder / "contract.py").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return None
    return short(found.group(1)) if found is not None else None


def _collect(
    module: ModuleType, found: dict[str, tuple[StateRef[Any], Callable[..., Any]]]
) -> None:
    for value in list(vars(module).values()):
        state = routine_state(value)
        if state is None:
            continue
        known = found.get(state.name)
        if known is not None and known[1] is not value:
            raise RegistryError(
                f"{state.name!r} has two routines: {_where(known[1])} and {_where(value)}"
            )
        found[state.name] = (state, value)


def _where(function: Callable[..., Any]) -> str:
    return f"{function.__module__}.{function.__qualname__}"


def load_routines(folder: Path) -> Registry:
    """Import every `*.py` of `folder` not starting with `_` (the folder first on the import path).

    Raises FolderError `cannot load the routines in <folder>: <Type>: <message>` on any error,
    and `<folder> has no routine: ...` when no function is marked.
    """
    absolute = folder.resolve()
    if str(absolute) in sys.path:
        sys.path.remove(str(absolute))
    sys.path.insert(0, str(absolute))
    found: dict[str, tuple[StateRef[Any], Callable[..., Any]]] = {}
    path = absolute
    try:
        for path in sorted(absolute.glob("*.py")):
            if not path.name.startswith("_"):
                _collect(_import_file(path), found)
    except Exception as exc:
        raise FolderError(_load_problem(absolute, path, exc)) from None
    if not found:
        raise FolderError(
            f"{absolute} has no routine: mark a function with @on_state(states.<state>)"
        )
    return Registry(found)
