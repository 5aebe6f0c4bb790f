"""`stateous demo`: the getting-started walkthrough in one command.

Each step runs the real command as a child process of this Python (`init workflow`,
`init supervisor`, `serve --supervise`), in a fresh temporary folder, so the demo shows exactly
what a new user gets, and a crash of one step cannot hang this process.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import IO

import click

from stateous.cli.params import WholeNumber
from stateous.client import Client, ClientError
from stateous.model.errors import StateousError
from stateous.model.history import CHILDREN_LIMIT, Line, show_lines

DRAFT_ROUTINE = """\
from stateous import on_state
from contract import ItemContext, events, states


@on_state(states.draft)
def draft(ctx: ItemContext) -> events.submitted | None:
    if ctx.visit > 1:
        ctx.note("the review sent this order back: a person must change it")
        return None
    return events.submitted()
"""
"""`orders-supervisor/draft.py` of the getting-started walkthrough."""

REVIEW_ROUTINE = """\
from stateous import on_state
from contract import ItemContext, Verdict, events, states


@on_state(states.review)
def review(ctx: ItemContext) -> events.reviewed:
    return events.reviewed(Verdict(approved=ctx["title"] != "reject me"))
"""
"""`orders-supervisor/review.py` of the getting-started walkthrough."""

REJECTED_TITLE = "reject me"
WAIT_SECONDS = 60.0
"""How long the demo waits for the control plane to start, and then for the tokens to settle."""
STOP_SECONDS = 15.0
CONSOLE_STOP_SECONDS = 5.0
"""How long the console may take to end after the demo was told to stop, before it is killed."""

#: The signals that stop the demo as quitting the console does: the terminal closed (SIGHUP,
#: not on Windows) and `kill` (SIGTERM). Ctrl-C (SIGINT) does so already, as KeyboardInterrupt.
STOP_SIGNALS = tuple(
    sig for sig in (getattr(signal, "SIGHUP", None), signal.SIGTERM) if sig is not None
)


class DemoError(StateousError):
    """A step of the demo failed; the sentence names the step and its last words."""

    code = "demo_failed"


class StopSignals:
    """SIGHUP and SIGTERM end the demo through its normal clean-up, as an exception would.

    The first one raises `SystemExit(128 + signal)` where the demo is, so every `with` block
    unwinds: the console ends, the control plane is stopped (its own session never sees the
    terminal's signals), the temporary folder is deleted. Later ones are ignored, so that they
    cannot cut that clean-up short. Inside `held()` (while a child is being started and not yet
    in the care of a `finally`) the signal waits for the end of the block.
    """

    def __init__(self) -> None:
        self.stopping = False
        self.holding = 0
        self.pending: int | None = None

    def on_signal(self, signum: int, _frame: FrameType | None) -> None:
        """The handler: stop now, or when the held block ends."""
        if self.stopping:
            return
        if self.holding:
            self.pending = signum
            return
        self.stopping = True
        raise SystemExit(128 + signum)

    @contextmanager
    def held(self) -> Iterator[None]:
        """Let a stop signal wait until the block ends; then act on it."""
        self.holding += 1
        try:
            yield
        finally:
            self.holding -= 1
        if not self.holding and self.pending is not None and not self.stopping:
            self.stopping = True
            raise SystemExit(128 + self.pending)

    @contextmanager
    def installed(self) -> Iterator[None]:
        """Handle the stop signals during the block (only the main thread can)."""
        self.stopping, self.pending = False, None
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        previous = {sig: signal.signal(sig, self.on_signal) for sig in STOP_SIGNALS}
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)


_STOPS = StopSignals()


def titles(count: int) -> list[str]:
    """The context titles of the demo's tokens: the second one is rejected by the review."""
    names = [f"order {n}" for n in range(1, count + 1)]
    if count >= 2:
        names[1] = REJECTED_TITLE
    return names


# ---------------------------------------------------------------- the steps


def _stateous(*args: str) -> list[str]:
    return [sys.executable, "-m", "stateous", *args]


def _child_env() -> dict[str, str]:
    # The children's output is read line by line, and must not wait in a buffer.
    return {**os.environ, "PYTHONUNBUFFERED": "1", "NO_COLOR": "1"}


def _run_step(folder: Path, *args: str) -> None:
    """Run one `stateous` command in `folder`; its output goes to our stderr on failure."""
    done = subprocess.run(
        _stateous(*args), cwd=folder, capture_output=True, text=True, env=_child_env()
    )
    if done.returncode != 0:
        last = (done.stderr.strip() or done.stdout.strip() or "no output").splitlines()[-1]
        raise DemoError(f"the demo failed at `stateous {' '.join(args)}`: {last}")


def prepare(folder: Path) -> Path:
    """Write the `orders` starter and its supervisor with the walkthrough's routines."""
    _run_step(folder, "init", "workflow", "orders")
    _run_step(folder, "init", "supervisor", "orders/flow.py", "orders-supervisor")
    supervisor = folder / "orders-supervisor"
    (supervisor / "draft.py").write_text(DRAFT_ROUTINE, encoding="utf-8")
    (supervisor / "review.py").write_text(REVIEW_ROUTINE, encoding="utf-8")
    return supervisor


class Server:
    """`stateous serve … --supervise …` as a child process, with its stderr collected."""

    def __init__(self, folder: Path) -> None:
        db = f"sqlite:///{folder / 'stateous.db'}"
        self.lines: list[str] = []
        self._ready = threading.Event()
        self.url = ""
        self.process = subprocess.Popen(
            _stateous(
                "serve",
                "orders/build/orders.json",
                "--db",
                db,
                "--listen",
                "127.0.0.1:0",
                "--supervise",
                "orders-supervisor",
            ),
            cwd=folder,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env=_child_env(),
            # Ctrl-C at the terminal goes to the demo only; it then stops the server itself.
            start_new_session=True,
        )
        assert self.process.stderr is not None
        threading.Thread(target=self._read, args=(self.process.stderr,), daemon=True).start()

    def _read(self, stream: IO[str]) -> None:
        for raw in stream:
            line = raw.rstrip("\n")
            self.lines.append(line)
            if line.startswith("serving on ") and not self.url:
                self.url = line.removeprefix("serving on ").split(" ")[0]
                self._ready.set()
        self._ready.set()

    def wait_ready(self, timeout: float = WAIT_SECONDS) -> str:
        """The URL of the `serving on …` line, or `DemoError` when the server did not start."""
        self._ready.wait(timeout)
        if not self.url:
            self.stop()
            last = self.lines[-1] if self.lines else "it said nothing"
            raise DemoError(f"the demo's control plane did not start: {last}")
        return self.url

    def stop(self) -> int | None:
        """Ctrl-C, as a user would; kill it if it does not stop in time. Returns the exit code."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                return self.process.wait(STOP_SECONDS)
            except subprocess.TimeoutExpired:
                self.process.kill()
        return self.process.wait()


@contextmanager
def running_server(folder: Path) -> Iterator[Server]:
    """A started server, stopped when the block ends (also on an error, Ctrl-C or a signal)."""
    server: Server | None = None
    try:
        with _STOPS.held():
            server = Server(folder)
        server.wait_ready()
        yield server
    finally:
        if server is not None:
            server.stop()


def settled(client: Client, token_id: str) -> bool:
    """Whether a token is done moving: it ended, or a routine left its work to a person."""
    token = client.get(token_id)
    if token.get("status") != "active":
        return True
    entries = client.history(token_id)
    return bool(entries) and entries[-1].get("kind") == "task_waiting"


def wait_settled(client: Client, token_ids: list[str], timeout: float = WAIT_SECONDS) -> None:
    """Poll until every token settled, or `DemoError` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    pending = list(token_ids)
    while pending:
        pending = [token for token in pending if not settled(client, token)]
        if pending and time.monotonic() > deadline:
            raise DemoError(
                f"the demo's tokens did not settle in {timeout:.0f} seconds: {', '.join(pending)}"
            )
        if pending:
            time.sleep(0.1)


def show(client: Client, token_id: str) -> list[Line]:
    """The lines `stateous token show ID` prints."""
    children = client.tokens(parent=token_id, limit=CHILDREN_LIMIT)
    return show_lines(client.get(token_id), children, client.history(token_id))


def _echo(lines: list[Line]) -> None:
    # The same printing as `token show`: coloured on a terminal, plain when piped.
    from stateous.cli.token import echo_lines

    echo_lines(lines)


def _note(text: str) -> None:
    click.echo(f"demo: {text}", err=True)


def _open_console(url: str, supervisor: Path) -> None:
    _note("the console is open on the demo; quit it (ctrl+q) to stop the demo")
    with _STOPS.held():
        console = subprocess.Popen(
            _stateous("console", "--url", url, "--supervisor", str(supervisor))
        )
    try:
        console.wait()
    finally:
        _end(console)


def _end(process: subprocess.Popen[bytes]) -> None:
    """Ask a child that is still running to end (SIGTERM); kill it if it does not in time."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(CONSOLE_STOP_SECONDS)
        except subprocess.TimeoutExpired:
            process.kill()
    process.wait()


def run_demo(count: int, console: bool) -> None:
    """The whole demo: prepare, serve, start `count` tokens, wait, print, stop.

    SIGHUP (the terminal closed) and SIGTERM stop it at any point with the same clean-up as
    the end (no child left, no folder left); it then exits with 128 + the signal's number.
    """
    with _STOPS.installed(), tempfile.TemporaryDirectory(prefix="stateous-demo-") as name:
        folder = Path(name)
        _note(f"writing the orders workflow and its supervisor in {folder}")
        supervisor = prepare(folder)
        with running_server(folder) as server:
            _note(f"the control plane serves on {server.url}, with the supervisor inside")
            tokens = _start_tokens(server.url, count)
            with Client(server.url) as client:
                wait_settled(client, tokens)
                for index, token in enumerate(tokens):
                    if index:
                        click.echo("")
                    _echo(show(client, token))
            if console:
                _open_console(server.url, supervisor)
        _note("stopped")


def _start_tokens(url: str, count: int) -> list[str]:
    ids = [f"ORDER-{n}" for n in range(1, count + 1)]
    with Client(url) as client:
        for token, title in zip(ids, titles(count), strict=True):
            client.start(token, {"title": title})
    _note(f"started {count} token(s): {', '.join(ids)}")
    return ids


@click.command("demo", context_settings={"help_option_names": ["--help"]})
@click.option(
    "--tokens",
    "count",
    type=WholeNumber(1, 100),
    default=3,
    show_default=True,
    metavar="N",
    help="How many tokens to start; the second one is rejected by the review.",
)
@click.option("--console", is_flag=True, help="Open the console on the demo instead of stopping.")
def demo_command(count: int, console: bool) -> None:
    """Run the orders example end to end on embedded SQLite; print the histories.

    In a fresh temporary folder: write the orders starter and a supervisor with the tutorial's
    routines, serve it on a free port with the supervisor inside, start the tokens, wait for
    them, print each one as `stateous token show` does, and stop.
    """
    try:
        run_demo(count, console)
    except ClientError as exc:
        raise DemoError(f"the demo failed: {exc}") from None
