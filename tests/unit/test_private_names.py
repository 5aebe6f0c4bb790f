"""Every name of uvicorn and SQLAlchemy that Stateous uses outside their public API, checked for
what Stateous needs of it: it exists, it is called, its signature is the one used.

An upgrade that renames or reshapes one fails here, naming the name and the file that uses it,
instead of somewhere in the engine or as a quiet loss of speed. Where a name is overridden (a
method uvicorn should call), the test also checks that uvicorn still calls it.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from datetime import datetime
from typing import Any

import pytest
import uvicorn
from sqlalchemy import (
    Column,
    Connection,
    DateTime,
    Integer,
    MetaData,
    Table,
    bindparam,
    insert,
    select,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.dialects.sqlite import DATETIME as SQLITE_DATETIME
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.protocols.http.h11_impl import RequestResponseCycle as H11Cycle

PROTOCOL = "stateous/control/api/protocol.py"
RUNTIME = "stateous/control/runtime.py"
DIRECT = "stateous/control/store/direct.py"


def relied_on(name: str, user: str, what: str) -> str:
    """The message of a failed check."""
    return f"{name}: {what}; {user} relies on it. Adapt {user} before upgrading."


def parameters(function: Callable[..., Any]) -> list[str]:
    return list(inspect.signature(function).parameters)


def source(thing: Any) -> str:
    return inspect.getsource(thing)


# --- uvicorn ------------------------------------------------------------------------------------


def http_protocols() -> list[tuple[str, type[Any], type[Any]]]:
    """uvicorn's HTTP protocol classes the control plane may subclass, with their cycles."""
    found: list[tuple[str, type[Any], type[Any]]] = [("H11Protocol", H11Protocol, H11Cycle)]
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
        from uvicorn.protocols.http.httptools_impl import RequestResponseCycle as Cycle
    except ImportError:  # httptools is optional; the control plane then subclasses H11Protocol
        return found
    return [("HttpToolsProtocol", HttpToolsProtocol, Cycle), *found]


@pytest.mark.parametrize(("name", "cls", "cycle"), http_protocols(), ids=lambda v: str(v)[:20])
def test_uvicorn_http_protocol_classes(name: str, cls: type[Any], cycle: type[Any]) -> None:
    where = f"uvicorn.protocols.http.{name}"
    for method, args in [
        ("connection_made", ["self", "transport"]),
        ("data_received", ["self", "data"]),
        ("connection_lost", ["self", "exc"]),
        ("send_400_response", ["self", "msg"]),
    ]:
        assert callable(getattr(cls, method, None)), relied_on(
            f"{where}.{method}", PROTOCOL, "no longer a method"
        )
        assert parameters(getattr(cls, method)) == args, relied_on(
            f"{where}.{method}", PROTOCOL, f"its parameters are no longer {args}"
        )
    assert "self.send_400_response(" in source(cls), relied_on(
        f"{where}.send_400_response", PROTOCOL, "uvicorn no longer calls it on a parser error"
    )
    assert "self.cycle = " in source(cls), relied_on(
        f"{where}.cycle", PROTOCOL, "the protocol no longer keeps its request's cycle there"
    )
    init = source(cycle.__init__)
    for attribute in ("keep_alive", "more_body"):
        assert f"self.{attribute} = " in init, relied_on(
            f"{where} RequestResponseCycle.{attribute}", PROTOCOL, "the cycle no longer has it"
        )
    assert "self.transport.close()" in source(cycle.send), relied_on(
        f"{where} RequestResponseCycle.send", PROTOCOL, "it no longer closes through the transport"
    )


def test_uvicorn_server_capture_signals() -> None:
    name = "uvicorn.Server.capture_signals"
    assert callable(getattr(uvicorn.Server, "capture_signals", None)), relied_on(
        name, RUNTIME, "no longer a method"
    )
    assert parameters(uvicorn.Server.capture_signals) == ["self"], relied_on(
        name, RUNTIME, "it now takes parameters"
    )
    assert "with self.capture_signals():" in source(uvicorn.Server.serve), relied_on(
        name, RUNTIME, "Server.serve no longer enters it as a context manager"
    )


def test_uvicorn_server_shutdown() -> None:
    assert parameters(uvicorn.Server.shutdown) == ["self", "sockets"], relied_on(
        "uvicorn.Server.shutdown", RUNTIME, "its parameters are no longer (self, sockets)"
    )


# --- SQLAlchemy ---------------------------------------------------------------------------------

TABLE = Table("t", MetaData(), Column("id", Integer, primary_key=True), Column("at", DateTime))


def test_sqlalchemy_connection_handle_dbapi_exception() -> None:
    name = "sqlalchemy.Connection._handle_dbapi_exception"
    assert callable(getattr(Connection, "_handle_dbapi_exception", None)), relied_on(
        name, DIRECT, "no longer a method"
    )
    assert parameters(Connection._handle_dbapi_exception)[:6] == [
        "self", "e", "statement", "parameters", "cursor", "context",
    ], relied_on(name, DIRECT, "its parameters are no longer (e, statement, parameters, cursor, context)")  # fmt: skip


def test_sqlalchemy_sqlite_datetime_storage_format() -> None:
    name = "sqlalchemy.dialects.sqlite.DATETIME._storage_format"
    kind = SQLITE_DATETIME()  # type: ignore[no-untyped-call]
    assert isinstance(getattr(kind, "_storage_format", None), str), relied_on(
        name, DIRECT, "no longer a format string"
    )
    # direct.py writes a naive datetime as `isoformat(" ", "microseconds")` where SQLAlchemy's
    # bind processor of the default format would: the two must write the same text.
    process = kind.bind_processor(sqlite.dialect())
    when = datetime(2026, 10, 16, 20, 48, 44, 5)
    assert process is not None
    assert process(when) == when.isoformat(" ", "microseconds"), relied_on(
        name, DIRECT, "the default format no longer writes isoformat(' ', 'microseconds')"
    )


def test_sqlalchemy_update_base_returning() -> None:
    name = "sqlalchemy.sql.dml.UpdateBase._returning"
    plain, answering = update(TABLE), update(TABLE).returning(TABLE.c.id)
    for statement, expected in [(plain, False), (answering, True)]:
        assert bool(getattr(statement, "_returning", None)) is expected, relied_on(
            name, DIRECT, "it no longer tells whether the statement has RETURNING"
        )
    assert bool(insert(TABLE)._returning) is False, relied_on(name, DIRECT, "not on INSERT")


@pytest.mark.parametrize("dialect", [sqlite.dialect, postgresql.dialect], ids=["sqlite", "pg"])
def test_sqlalchemy_compiler_internals(dialect: Any) -> None:
    where = "sqlalchemy.sql.compiler.SQLCompiler"
    statement = select(TABLE.c.id).where(
        TABLE.c.id == bindparam("one"), TABLE.c.id.in_(bindparam("many", expanding=True))
    )
    compiled: Any = statement.compile(dialect=dialect())
    for attribute in ("binds", "bind_names", "positiontup", "string"):
        assert hasattr(compiled, attribute), relied_on(f"{where}.{attribute}", DIRECT, "gone")
    binds = compiled.binds
    assert set(binds) == {"one", "many"}, relied_on(f"{where}.binds", DIRECT, "not keyed by name")
    for bind in binds.values():
        for flag in ("literal_execute", "expanding"):
            assert isinstance(getattr(bind, flag, None), bool), relied_on(
                f"sqlalchemy BindParameter.{flag}", DIRECT, "no longer a flag"
            )
    assert set(compiled.bind_names.values()) == {"one", "many"}, relied_on(
        f"{where}.bind_names", DIRECT, "no longer maps each bind to its name"
    )
    state = compiled.construct_expanded_state({"one": 1, "many": [2, 3]})
    assert isinstance(state.statement, str) and set(state.parameters) >= {"one"}, relied_on(
        f"{where}.construct_expanded_state", DIRECT, "no longer answers .statement, .parameters"
    )
    assert hasattr(state, "positiontup"), relied_on(
        f"{where}.construct_expanded_state", DIRECT, "its state has no .positiontup"
    )
