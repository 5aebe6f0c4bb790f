"""`make bench`: run every benchmark (each prints one JSON line) and write bench/results.json.

Each script runs as its own process, one after another (the machine has few cores, and the
figures must not disturb each other). A script that fails is recorded with its last words, and
the others still run. Usage: `python bench/run_all.py [--quick]` (`--quick`: smaller runs).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

FULL: list[tuple[str, list[str]]] = [
    ("start_rate", ["start_rate.py"]),
    ("latency", ["latency.py"]),
    ("e2e_sqlite", ["e2e.py", "--db", "sqlite"]),
    ("e2e_postgres_2", ["e2e.py", "--db", "postgres", "--supervisors", "2"]),
    ("scale", ["scale.py"]),
    ("scale_postgres", ["scale.py", "--db", "postgres"]),
    ("versions", ["versions.py"]),
    ("retention", ["retention.py"]),
    ("memory", ["memory.py"]),
    ("bulk_latency_sqlite", ["bulk_latency.py", "--db", "sqlite"]),
    ("bulk_latency_postgres", ["bulk_latency.py", "--db", "postgres"]),
]

QUICK: dict[str, list[str]] = {
    "start_rate": ["--tokens", "300"],
    "latency": ["--tokens", "20"],
    "e2e_sqlite": ["--tokens", "300"],
    "e2e_postgres_2": ["--tokens", "300"],
    "scale": ["--preload", "10000", "--live", "1000", "--tokens", "300", "--requests", "10"],
    "scale_postgres": [
        "--preload",
        "10000",
        "--live",
        "1000",
        "--tokens",
        "300",
        "--requests",
        "10",
    ],
    "versions": ["--old", "10000", "--tokens", "300", "--rounds", "1"],
    "retention": ["--tokens", "300", "--cycles", "3"],
    "memory": ["--preload", "10000", "--tokens", "300"],
    "bulk_latency_sqlite": ["--bulk", "2000", "--live", "300", "--ops", "100"],
    "bulk_latency_postgres": ["--bulk", "2000", "--live", "300", "--ops", "100"],
}


def run(name: str, argv: list[str]) -> dict[str, object]:
    """Run one script; its JSON line (several: `{"bench", "figures": [lines]}`), or the
    failure."""
    began = time.monotonic()
    done = subprocess.run(
        [sys.executable, str(HERE / argv[0]), *argv[1:]], capture_output=True, text=True
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        last = (done.stderr.strip() or done.stdout.strip() or "no output").splitlines()[-1]
        return {"bench": name, "error": last, "seconds": round(time.monotonic() - began, 1)}
    if len(lines) > 1:  # scale.py: one line a figure
        return {"bench": name, "figures": [json.loads(line) for line in lines]}
    result: dict[str, object] = json.loads(lines[-1])
    return result


def main() -> None:
    """Run them all and write the results file."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", action="append", default=[], help="run only these names")
    parser.add_argument("--out", default=str(HERE / "results.json"))
    args = parser.parse_args()
    results = {}
    for name, argv in FULL:
        if args.only and name not in args.only:
            continue
        extra = QUICK.get(name, []) if args.quick else []
        results[name] = run(name, argv + extra)
        print(json.dumps({"name": name, **results[name]}), flush=True)
    document = {
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "load_after": [round(x, 2) for x in os.getloadavg()],
        "results": results,
    }
    Path(args.out).write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
