"""The routine of `testing`: run the checkout's tests with pytest and report the counts."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

from stateous import on_state

from contract import Tests, TicketContext, events, states


def run_pytest(checkout: Path) -> Tests:
    """Run pytest in `checkout` and count its JUnit report: failed = failures + errors."""
    if not checkout.is_dir():
        raise FileNotFoundError(f"no checkout at {checkout}")
    with tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch) / "report.xml"
        command = [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            f"--junitxml={report}",
        ]
        # A process group of its own: a Ctrl-C to the supervisor does not stop the tests, so a
        # graceful stop waits for them.
        if os.name == "nt":
            group = {"creationflags": subprocess.CREATE_NEW_PROCESS_GROUP}
        else:
            group = {"start_new_session": True}
        subprocess.run(command, cwd=checkout, capture_output=True, check=False, **group)  # type: ignore[call-overload]
        if not report.is_file():
            raise RuntimeError(f"pytest wrote no report for {checkout}")
        return count(ET.parse(report).getroot())


def count(root: ET.Element) -> Tests:
    """The counts of a JUnit XML report (one `testsuite`, or several under `testsuites`)."""
    suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
    tests = failed = skipped = 0
    for suite in suites:
        tests += int(suite.get("tests", 0))
        failed += int(suite.get("failures", 0)) + int(suite.get("errors", 0))
        skipped += int(suite.get("skipped", 0))
    return Tests(passed=tests - failed - skipped, failed=failed)


@on_state(states.testing)
def testing(ctx: TicketContext) -> events.passed | events.failed:
    result = run_pytest(Path(ctx["repo"]).absolute())
    if result.failed == 0:
        return events.passed(result)
    return events.failed(result)
