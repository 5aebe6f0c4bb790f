"""The conventions of a command line, on the real `stateous` script: `--version`, completion,
usage errors."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

SCRIPT = Path(sys.executable).with_name("stateous")


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SCRIPT), *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "NO_COLOR": "1", **(env or {})},
    )


def test_version_is_the_package_metadata() -> None:
    done = run("--version")
    assert (done.returncode, done.stdout, done.stderr) == (
        0,
        f"stateous {version('stateous')}\n",
        "",
    )


def test_version_is_in_the_help() -> None:
    done = run("--help")
    assert done.returncode == 0
    assert "  --version  Show the version and exit.\n" in done.stdout


def test_bash_source_prints_the_completion_script() -> None:
    done = run(env={"_STATEOUS_COMPLETE": "bash_source"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("_stateous_completion() {\n")
    assert done.stdout.rstrip("\n").endswith(
        "_stateous_completion_setup() {\n"
        "    complete -o nosort -F _stateous_completion stateous\n"
        "}\n\n_stateous_completion_setup;"
    )


# Loads the script as docs/cli.md says, then asks bash's completion function, as <Tab> would.
BASH = """
eval "$(_STATEOUS_COMPLETE=bash_source stateous)"
complete -p stateous
ask() { COMPREPLY=(); COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _stateous_completion stateous;
        echo "$*: ${COMPREPLY[*]}"; }
ask stateous to
ask stateous token s
ask stateous demo --
ask stateous co
ask stateous --
"""


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
def test_bash_completion_completes_commands_and_options() -> None:
    env = {**os.environ, "PATH": f"{SCRIPT.parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run(
        ["bash", "--norc", "--noprofile", "-c", BASH],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "complete -o nosort -F _stateous_completion stateous",
        "stateous to: token",
        "stateous token s: show start",
        "stateous demo --: --tokens --console --help",
        "stateous co: compile console",
        "stateous --: --version --help",
    ]


@pytest.mark.parametrize(
    ("args", "usage", "missing"),
    [
        (
            ("token", "fire", "T-1"),
            "stateous token fire [OPTIONS] [ID] EVENT [PAYLOAD_JSON]",
            "EVENT",
        ),
        (("token", "start"), "stateous token start [OPTIONS] ID [CONTEXT_JSON]", "ID"),
    ],
)
def test_a_missing_argument_is_a_usage_error(
    args: tuple[str, ...], usage: str, missing: str
) -> None:
    """A syntax mistake prints click's usage on stderr and exits 2, no request."""
    done = run(*args, env={"STATEOUS_URL": "http://127.0.0.1:9"})
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        f"Usage: {usage}\nTry 'stateous {args[0]} {args[1]} --help' for help.\n\n"
        f"Error: Missing argument '{missing}'.\n"
    )
