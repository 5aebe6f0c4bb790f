"""The folder's checks (stateous.yaml's keys and errors, loading the routines, at least one
routine) and the outbox."""

from __future__ import annotations

import json
import re
import socket
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from stateous.compiler.contract import contract_text
from stateous.supervisor.folder import FolderError, load_routines, read_folder, url_problem
from stateous.supervisor.outbox import Outbox, OutboxLocked
from stateous.tui.outbox import read_folder as console_view

DATA = Path(__file__).parent / "data"
YAML = 'url: "http://127.0.0.1:8080"\n'


@pytest.fixture
def folder(tmp_path: Path) -> Iterator[Path]:
    doc = json.loads((DATA / "sdlc.json").read_text(encoding="utf-8"))
    (tmp_path / "contract.py").write_text(contract_text(doc), encoding="utf-8")
    (tmp_path / "stateous.yaml").write_text(YAML, encoding="utf-8")
    before = set(sys.modules)
    yield tmp_path
    for name in set(sys.modules) - before:
        del sys.modules[name]
    sys.modules.pop("contract", None)
    if str(tmp_path.resolve()) in sys.path:
        sys.path.remove(str(tmp_path.resolve()))


def error(folder: Path) -> str:
    with pytest.raises(FolderError) as caught:
        read_folder(folder)
    return caught.value.message


def test_a_good_folder(folder: Path) -> None:
    settings = read_folder(folder)
    assert settings.url == "http://127.0.0.1:8080"
    assert settings.tasks == 4
    assert settings.name == socket.gethostname()
    assert settings.checksum.startswith("sha256:ce35bf07")
    (folder / "stateous.yaml").write_text(
        "url: https://cp.internal:8443/\ntasks: 2\nname: build-box-1\n", encoding="utf-8"
    )
    settings = read_folder(folder)
    assert (settings.url, settings.tasks, settings.name) == (
        "https://cp.internal:8443",
        2,
        "build-box-1",
    )


def test_missing_files(folder: Path, tmp_path: Path) -> None:
    assert error(folder / "nope") == f"{folder / 'nope'} is not a folder"
    (folder / "stateous.yaml").unlink()
    assert error(folder) == (
        f"{folder} has no stateous.yaml: run `stateous init supervisor URL {folder}`"
    )
    (folder / "contract.py").unlink()
    assert (
        error(folder) == f"{folder} has no contract.py: run `stateous init supervisor URL {folder}`"
    )


def test_contract_without_checksum_and_bad_yaml(folder: Path) -> None:
    (folder / "stateous.yaml").write_text("url: [", encoding="utf-8")
    assert error(folder).startswith(f"cannot read {folder}: ")
    (folder / "stateous.yaml").write_text("- 1\n", encoding="utf-8")
    assert error(folder) == f"cannot use {folder}/stateous.yaml: it is not a mapping of settings"
    (folder / "stateous.yaml").write_text("", encoding="utf-8")
    assert error(folder) == f"cannot use {folder}/stateous.yaml: url: missing"
    (folder / "contract.py").write_text("__checksum__ = 'x'\n", encoding="utf-8")
    assert error(folder) == (
        f"{folder}/contract.py has no __checksum__: run `stateous init supervisor URL {folder}` again"
    )


@pytest.mark.parametrize(
    ("text", "problems"),
    [
        ("url: ftp://x", "url: 'ftp://x' is not an http:// or https:// address"),
        ("url: http://x:99999", "url: 'http://x:99999' has the port 99999; a port is 1 to 65535"),
        ("url: http://", "url: 'http://' has no host"),
        (
            "url: http://a b",
            "url: 'http://a b' has a host that is not valid: a host has only letters, digits, '-' and '.', or is an IP address",
        ),
        ("url: http://x\ntasks: 0", "tasks: input should be greater than or equal to 1"),
        ("url: http://x\ntasks: 1001", "tasks: input should be less than or equal to 1000"),
        (
            "url: http://x\ntasks: many",
            "tasks: input should be a valid integer, unable to parse string as an integer",
        ),
        (
            "url: http://x\ntasks: 1.5",
            "tasks: input should be a valid integer, got a number with a fractional part",
        ),
        ("url: http://x\nname: ''", "name: string should have at least 1 character"),
        ("url: http://x\nname: " + "n" * 129, "name: string should have at most 128 characters"),
        ("url: http://x\ncolour: red", "colour: there is no such setting"),
        (
            "tasks: 0\nwho: me",
            "url: missing; tasks: input should be greater than or equal to 1; who: there is no such setting",
        ),
    ],
)
def test_yaml_problems(folder: Path, text: str, problems: str) -> None:
    (folder / "stateous.yaml").write_text(text + "\n", encoding="utf-8")
    assert error(folder) == f"cannot use {folder}/stateous.yaml: {problems}"


def test_url_hosts() -> None:
    assert url_problem("http://[::1]:8080") is None
    assert url_problem("http://localhost.") is None
    assert url_problem("http://my_host:80") is None
    assert url_problem("http://bücher.de") is not None
    assert url_problem("http://x:0") == "'http://x:0' has the port 0; a port is 1 to 65535"


def test_routines_are_loaded_in_file_order(folder: Path) -> None:
    (folder / "b.py").write_text(
        "from stateous import on_state\nfrom contract import states\n"
        "@on_state(states.testing)\ndef t(ctx): ...\n",
        encoding="utf-8",
    )
    (folder / "a.py").write_text(
        "from stateous import on_state\nfrom contract import states\n"
        "from b import t\n"
        "@on_state(states.coding)\nasync def c(ctx): ...\n",
        encoding="utf-8",
    )
    (folder / "_private.py").write_text("raise SystemExit\n", encoding="utf-8")
    assert load_routines(folder).states == ["testing", "coding"]  # a.py imports t first


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("import phd_is_not_here\n", "ModuleNotFoundError: No module named 'phd_is_not_here'"),
        (
            "from stateous import on_state\n@on_state('coding')\ndef o(ctx): ...\n",
            "TypeError: @on_state takes a state from contract.states, not 'coding'",
        ),
        (
            "from stateous import on_state\nfrom contract import states\n"
            "@on_state(states.coding)\ndef one(ctx): ...\n@on_state(states.coding)\ndef two(ctx): ...\n",
            "RegistryError: 'coding' has two routines: x.one and x.two",
        ),
    ],
)
def test_routines_that_do_not_load(folder: Path, source: str, message: str) -> None:
    (folder / "x.py").write_text(source, encoding="utf-8")
    with pytest.raises(FolderError) as caught:
        load_routines(folder)
    assert caught.value.message == f"cannot load the routines in {folder.resolve()}: {message}"


def test_a_routine_of_another_version_is_named(folder: Path) -> None:
    (folder / "x.py").write_text(
        "from stateous import on_state\nfrom contract import states\n"
        "@on_state(states.old)\ndef o(ctx): ...\n",
        encoding="utf-8",
    )
    with pytest.raises(FolderError) as caught:
        load_routines(folder)
    version = re.search(r"version ([0-9a-f]{8})\)", caught.value.message)
    assert version is not None, caught.value.message
    assert caught.value.message == (
        f"x.py names the state 'old', which the folder's contract.py (version {version[1]}) "
        "does not have: the routine is for another version of the workflow; write the contract "
        f"of its version with `stateous init supervisor URL {folder.resolve()}` (add "
        "`--checksum` for an older version)"
    )


def test_no_routine(folder: Path) -> None:
    with pytest.raises(FolderError) as caught:
        load_routines(folder)
    assert caught.value.message == (
        f"{folder.resolve()} has no routine: mark a function with @on_state(states.<state>)"
    )


def test_the_outbox_table_lock_and_order(tmp_path: Path) -> None:
    outbox = Outbox(tmp_path)
    first = outbox.add(2, 1, "T-1", "note", {"text": "hi"})
    second = outbox.add(2, 1, "T-1", "memory", {"key": "k", "value": None})
    outbox.add(
        3, 2, "T-2", "report", {"kind": "waiting", "context": None, "schedules": [], "attempt": 2}
    )
    assert [m.id for m in outbox.pending()] == [first.id, second.id, first.id + 2]
    assert first.created_at.endswith("+00:00")
    with pytest.raises(OutboxLocked) as caught:
        Outbox(tmp_path)
    assert caught.value.message == (
        f"another supervisor runs on {tmp_path.resolve()} now: stop it, or use another folder"
    )
    assert outbox.remove_attempt(2, 1) == 2
    outbox.close()
    conn = sqlite3.connect(tmp_path / ".stateous" / "outbox.db")
    columns = [(r[1], r[2], r[3], r[5]) for r in conn.execute("PRAGMA table_info(messages)")]
    assert columns == [
        ("id", "INTEGER", 0, 1),
        ("task", "INTEGER", 1, 0),
        ("attempt", "INTEGER", 1, 0),
        ("token", "TEXT", 1, 0),
        ("kind", "TEXT", 1, 0),
        ("body", "TEXT", 1, 0),
        ("created_at", "TEXT", 1, 0),
    ]
    rows = conn.execute("SELECT task, attempt, token, kind, body FROM messages").fetchall()
    assert rows == [
        (
            3,
            2,
            "T-2",
            "report",
            '{"kind": "waiting", "context": null, "schedules": [], "attempt": 2}',
        )
    ]
    conn.close()
    reopened = Outbox(tmp_path)
    assert [m.task for m in reopened.pending()] == [3]
    reopened.close()


def test_a_killed_supervisors_outbox_is_read_back_from_its_wal(tmp_path: Path) -> None:
    # The outbox is in WAL mode with an exclusive lock: a process killed after its commits
    # leaves them in `outbox.db-wal` only. The console's read-only reader, and the next start,
    # both find them; while the writer lives, the file reads as locked.
    script = (
        "import sys, time\n"
        "from pathlib import Path\n"
        "from stateous.supervisor.outbox import Outbox\n"
        "outbox = Outbox(Path(sys.argv[1]))\n"
        "outbox.add(2, 1, 'T-1', 'note', {'text': 'hi'})\n"
        "outbox.add(3, 1, 'T-2', 'note', {'text': 'there'})\n"
        "print('written', flush=True)\n"
        "time.sleep(60)\n"
    )
    writer = subprocess.Popen(
        [sys.executable, "-c", script, str(tmp_path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert writer.stdout is not None and writer.stdout.readline() == "written\n"
        live = console_view(str(tmp_path))
        assert (live.running, live.outbox_readable, live.messages) == (True, False, ())
        writer.kill()
        assert writer.wait(timeout=10) == -9
    finally:
        if writer.poll() is None:
            writer.kill()
        writer.communicate()
    assert (tmp_path / ".stateous" / "outbox.db-wal").exists()
    view = console_view(str(tmp_path))
    assert [(m.task, m.token) for m in view.messages] == [(2, "T-1"), (3, "T-2")]
    assert (view.running, view.outbox_readable) == (False, True)
    assert not [problem for problem in view.problems if "outbox" in problem]
    reopened = Outbox(tmp_path)
    assert [(m.task, m.token) for m in reopened.pending()] == [(2, "T-1"), (3, "T-2")]
    reopened.close()
