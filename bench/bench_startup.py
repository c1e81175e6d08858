"""Start-up benchmark: the thin commands as a user types them, each a fresh process, wall and CPU time.

    python bench/bench_startup.py [--runs 5] [--compare-tree DIR] [--write-md]

Times `metastore --help`, `metastore sql --connect thrift://... -e "SHOW DATABASES;"` (against a server this
script starts on a temporary SQLite database) and `metastore orc meta f.orc`, and also bare `python -c pass` as
the interpreter's own floor. Each command runs `--runs` times; the best wall and CPU (user + system) time is kept.

`--compare-tree DIR` times a second source tree side by side (e.g. an older commit unpacked with
`git archive OLD | tar -x -C DIR`), interleaved run by run so that both meet the same machine load; its
interpreter is this one, with DIR first on PYTHONPATH. Byte-code is cached as a user's install caches it.
`--write-md` replaces the "Start-up of the thin commands" section of BENCHMARKS.md (the target is 0.3 s).
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ORC_FILE = REPO / "tests" / "data" / "orc" / "TestOrcFile.test1.orc"
_MAIN = "import sys; from metastore.cli import main; sys.exit(main())"


@dataclass(frozen=True)
class Timing:
    """Best wall and CPU seconds over the runs."""

    wall: float
    cpu: float


def _run_once(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    # cwd: `python -c` puts the working directory first on sys.path, ahead of PYTHONPATH; a neutral one keeps
    # each tree importing its own package.
    result = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120, cwd=cwd)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed: {result.stderr.strip()}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _env(tree: Path | None) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # a user's install has its byte-code cached
    if tree is not None:
        env["PYTHONPATH"] = str(tree)
        # The other tree's byte-code goes to a cache of its own rather than into that tree.
        env["PYTHONPYCACHEPREFIX"] = str(Path(tempfile.gettempdir()) / "metastore-bench-pycache")
    return env


def _start_server(workdir: Path) -> tuple[subprocess.Popen[str], int]:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, "-c", _MAIN, "serve", "--port", str(port), "--workers", "1",
         "--db", f"sqlite:///{workdir / 'ms.db'}", "--warehouse", str(workdir / "warehouse")],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=_env(None), cwd=workdir,
    )
    assert process.stdout is not None
    for line in process.stdout:
        if "listening on" in line:
            return process, port
    raise RuntimeError(f"metastore serve exited with {process.wait()}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="runs per command; the best is kept (default 5)")
    parser.add_argument("--compare-tree", type=Path, metavar="DIR", help="another source tree to time alongside")
    parser.add_argument("--write-md", action="store_true", help="write the section of BENCHMARKS.md")
    args = parser.parse_args(argv)
    started = dt.datetime.now()
    load_before = ", ".join(f"{x:.1f}" for x in os.getloadavg())

    trees: dict[str, Path | None] = {"this tree": None}
    if args.compare_tree is not None:
        trees = {"compared tree": args.compare_tree.resolve(), "this tree": None}
    with tempfile.TemporaryDirectory() as tmp:
        server, port = _start_server(Path(tmp))
        try:
            commands = {
                "python -c pass": ["-c", "pass"],
                "metastore --help": ["-c", _MAIN, "--help"],
                'metastore sql --connect ... -e "SHOW DATABASES;"':
                    ["-c", _MAIN, "sql", "--connect", f"thrift://127.0.0.1:{port}", "-e", "SHOW DATABASES;"],
                "metastore orc meta f.orc": ["-c", _MAIN, "orc", "meta", str(ORC_FILE)],
            }
            best: dict[tuple[str, str], Timing] = {}
            for label, command in commands.items():
                for _ in range(args.runs):
                    for tree_name, tree in trees.items():
                        wall, cpu = _run_once([sys.executable, *command], _env(tree), Path(tmp))
                        old = best.get((label, tree_name), Timing(float("inf"), float("inf")))
                        best[(label, tree_name)] = Timing(min(old.wall, wall), min(old.cpu, cpu))
        finally:
            server.terminate()
            server.wait(timeout=30)

    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"best of {args.runs}, {os.cpu_count()} cores, load average {load}")
    header = "| command | " + " | ".join(f"{t} wall s | {t} CPU s" for t in trees) + " | target |"
    lines = [header, "|" + "---|" * (2 + 2 * len(trees))]
    for label in commands:
        cells = " | ".join(f"{best[(label, t)].wall:.3f} | {best[(label, t)].cpu:.3f}" for t in trees)
        target = "—" if label == "python -c pass" else (
            "≤ 0.3 s: met" if best[(label, "this tree")].wall <= 0.3 else "≤ 0.3 s: NOT met")
        lines.append(f"| {label} | {cells} | {target} |")
    print("\n".join(lines))
    if args.write_md:
        sys.path.insert(0, str(REPO / "bench"))
        from bench_analyze import machine

        intro = (f"`python bench/bench_startup.py --runs {args.runs}`: each command as a fresh process (the interpreter "
                 "this tree's package is installed in, byte-code cached as an installed package's is), best wall and CPU "
                 "(user + system) seconds of the runs; `SHOW DATABASES` against a `metastore serve` on SQLite that the "
                 "bench starts; `orc meta` of tests/data/orc/TestOrcFile.test1.orc.")
        context = (f"{started.strftime('%Y-%m-%d %H:%M')}, {machine()}. Load average (1/5/15 min) before "
                   f"{load_before}, after {load}: the machine is shared with other work.")
        import textwrap

        section = ("## Start-up of the thin commands\n\n" + textwrap.fill(intro, 110, break_on_hyphens=False) + "\n\n"
                   + textwrap.fill(context, 110, break_on_hyphens=False) + "\n\n" + "\n".join(lines) + "\n")
        _write_section(REPO / "BENCHMARKS.md", "Start-up of the thin commands", section)
    return 0


def _write_section(path: Path, title: str, section: str) -> None:
    """Replace (or append) the '## <title>' section of a markdown file."""
    text = path.read_text()
    pattern = re.compile(rf"^## {re.escape(title)}\n.*?(?=^## |\Z)", re.S | re.M)
    if pattern.search(text):
        text = pattern.sub(lambda _: section.rstrip("\n") + "\n\n", text)
    else:
        text = text.rstrip("\n") + "\n\n" + section
    path.write_text(text.rstrip("\n") + "\n")


if __name__ == "__main__":
    sys.exit(main())
