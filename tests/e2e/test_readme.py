"""Every command of README.md, run as written, with its printed lines checked.

The README's blocks are read in order: a `bash` block holds commands, the `text` block after a
command holds what it prints, and a `python` block whose first line is `# <path>` is a file to
write. Two changes make the run safe beside other suites: `stateous serve` listens on a free port
instead of 8080 (the token commands get that URL from `STATEOUS_URL`, the supervisor from its
`stateous.yaml`), and `make test` is not run from inside the test suite: it is what CI runs
(`.ci/run`), and this test checks that.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import pytest

from tests.support import free_port

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
DEFAULT_URL = "http://127.0.0.1:8080"
TIME = re.compile(r"^\d\d:\d\d:\d\d  ", re.MULTILINE)


def blocks(text: str) -> list[tuple[str, str]]:
    """The fenced blocks of a Markdown text: (language, body)."""
    return [(m.group(1), m.group(2)) for m in FENCE.finditer(text)]


def commands(body: str) -> list[str]:
    """The command lines of a bash block (comments and blank lines left out)."""
    lines = (line.split("#", 1)[0].strip() for line in body.splitlines())
    return [line for line in lines if line]


@dataclass
class Background:
    """A command that keeps running (serve, supervise), with its stderr lines."""

    process: subprocess.Popen[str]
    lines: list[str] = field(default_factory=list)
    reader: threading.Thread | None = None

    def pump(self, stream: IO[str]) -> None:
        for raw in stream:
            self.lines.append(raw.rstrip("\n"))

    def wait_for(self, needle: str, timeout: float = 60.0) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in list(self.lines):
                if needle in line:
                    return line
            assert self.process.poll() is None, "\n".join(self.lines)
            time.sleep(0.05)
        raise AssertionError(f"no line with {needle!r}: " + "\n".join(self.lines))

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
        try:
            code = self.process.wait(20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            code = self.process.wait()
        # The pipe ends with the process; close it once read, or the collector warns.
        if self.reader is not None:
            self.reader.join(5)
        if self.process.stderr is not None:
            self.process.stderr.close()
        return code


@dataclass
class Walkthrough:
    """The state of the run: the folder, the environment, what is running."""

    cwd: Path
    env: dict[str, str]
    url: str
    supervisor_name: str = "build-box-1"
    running: list[Background] = field(default_factory=list)
    last: str = ""

    def expected(self, text: str) -> str:
        text = text.replace(DEFAULT_URL, self.url)
        return text.replace("build-box-1", self.supervisor_name)

    def start(self, argv: list[str]) -> Background:
        process = subprocess.Popen(
            argv, cwd=self.cwd, env=self.env, text=True,
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )  # fmt: skip
        job = Background(process)
        assert process.stderr is not None
        job.reader = threading.Thread(target=job.pump, args=(process.stderr,), daemon=True)
        job.reader.start()
        self.running.append(job)
        return job


def run(line: str, tour: Walkthrough) -> str:
    """Run one command line of the README; returns what it printed (for the next text block)."""
    argv = shlex.split(line)
    if argv[:2] == ["make", "test"]:
        assert "make test" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")
        return ""
    if argv[0] == "make":
        return _make(argv, tour)
    if argv[:1] == ["source"]:
        activate = ROOT / argv[1]
        assert activate.is_file()
        tour.env["PATH"] = f"{activate.parent}{os.pathsep}{tour.env['PATH']}"
        tour.env["VIRTUAL_ENV"] = str(activate.parent.parent)
        return ""
    if argv[0] == "cd":
        tour.cwd = tour.cwd / argv[1]
        return ""
    if argv[:2] == ["stateous", "serve"]:
        job = tour.start([*argv, "--listen", tour.url.removeprefix("http://")])
        return job.wait_for("serving on ") + "\n"
    if argv[:2] == ["stateous", "supervise"]:
        return _supervise(argv, tour)
    done = subprocess.run(argv, cwd=tour.cwd, env=tour.env, capture_output=True, text=True)
    assert done.returncode == 0, (line, done.stderr)
    return done.stdout


def _make(argv: list[str], tour: Walkthrough) -> str:
    done = subprocess.run(argv, cwd=ROOT, env=tour.env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    if argv[1] == "demo":
        assert done.stdout.startswith("ORDER-1: review, completed\n"), done.stdout
    return done.stdout


def _supervise(argv: list[str], tour: Walkthrough) -> str:
    config = tour.cwd / argv[2] / "stateous.yaml"
    config.write_text(config.read_text().replace(DEFAULT_URL, tour.url), encoding="utf-8")
    job = tour.start(argv)
    first = job.wait_for(" serves ")
    found = re.search(
        r"stateous\.supervisor: (\S+) serves draft, review; the control plane is ", first
    )
    assert found is not None, first
    tour.supervisor_name = found[1]
    return ""


def check_output(line: str, expected: str, tour: Walkthrough) -> None:
    """The command printed `expected`; `token show` is asked again until the token settled."""
    want = tour.expected(expected)
    got = tour.last
    deadline = time.monotonic() + 30
    while TIME.sub("HH:MM:SS  ", got) != TIME.sub("HH:MM:SS  ", want):
        if "token show" not in line or time.monotonic() > deadline:
            break
        time.sleep(0.2)
        got = run(line, tour)
    assert TIME.sub("HH:MM:SS  ", got) == TIME.sub("HH:MM:SS  ", want), line


def test_every_command_of_the_readme(tmp_path: Path) -> None:
    # Under `make test`, MAKEFLAGS and MAKELEVEL would make the README's own `make demo` print
    # `make[1]: Entering directory ...`; a reader's shell has neither.
    dropped = ("STATEOUS_URL", "VIRTUAL_ENV", "MAKEFLAGS", "MAKELEVEL", "MFLAGS")
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    url = f"http://127.0.0.1:{free_port()}"
    tour = Walkthrough(
        cwd=tmp_path, env={**env, "STATEOUS_URL": url, "PYTHONUNBUFFERED": "1"}, url=url
    )
    ran: list[str] = []
    line = ""
    try:
        for language, body in blocks(README.read_text(encoding="utf-8")):
            if language == "bash":
                for line in commands(body):
                    tour.last = run(line, tour)
                    ran.append(line)
            elif language == "text":
                check_output(line, body, tour)
            elif language == "python":
                first, _, _ = body.partition("\n")
                target = tour.cwd / first.removeprefix("# ").strip()
                target.write_text(body, encoding="utf-8")
        # "its history then ends with `task 5 cancelled` and `cancelled`"
        ended = run("stateous token show ORDER-2", tour).splitlines()
        assert [line[10:] for line in ended[-2:]] == ["#19  task 5 cancelled", "#20  cancelled"]
        stops = [job.stop() for job in reversed(tour.running)]
    finally:
        for job in tour.running:
            job.stop()
    assert stops == [0, 0]
    assert tour.running[0].lines[-1] == "stopped"
    assert "stateous token cancel ORDER-2" in ran and "make demo" in ran


def test_the_readme_opens_with_five_lines_then_the_two_commands() -> None:
    text = README.read_text(encoding="utf-8")
    intro = text.split("\n## ", 1)[0].strip().splitlines()
    assert intro[0] == "# Stateous" and len([line for line in intro[1:] if line]) == 5
    first_block = blocks(text)[0]
    assert commands(first_block[1]) == ["make demo", "make test"]


@pytest.mark.parametrize("link", ["docs/cli.md", "docs/client.md"])
def test_the_links_into_docs_exist(link: str) -> None:
    assert f"]({link})" in README.read_text(encoding="utf-8")
    assert (ROOT / link).is_file()
