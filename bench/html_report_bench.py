"""How large the HTML report of a fleet is, and how long a browser takes to open it.

    python bench/html_report_bench.py --templates 128 10000 --runs 5
    python bench/html_report_bench.py --templates 10000 --page other.html   # compare a page

For each size, a corpus from bench/generate_templates.py is audited once in this process by the
local engine (``engine.audit``), and its report rendered (``report.render_html``, median of
``--runs``) and written to a file. Then headless Chromium (Debian's ``/usr/bin/chromium``, with
the flags of tests/audit/report/test_html_report.py) opens each page ``--runs`` times two ways, as a
new process each time:

- ``--dump-dom``: parse the page, build its DOM and print it (no paint);
- ``--screenshot``: as above, then lay out and paint the first 1200 x 1800 pixels.

An empty page is opened the same way in every round; pages run in an order rotated from round
to round. Reported per page: bytes, and the median wall time of each way, with the empty page's
median taken off (what the page itself costs beyond starting the browser). ``--page FILE``
adds pages rendered elsewhere (an older version's report of the same corpus, say).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import generate_templates as generator  # noqa: E402

from constructs_lib.audit import report  # noqa: E402
from constructs_lib.audit.engines import AuditInputs, AuditOptions  # noqa: E402
from constructs_lib.audit.engines import local as engine  # noqa: E402
from constructs_lib.audit.inputs import discovery  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
EMPTY = "<!DOCTYPE html><html><body></body></html>"
MODES = ("dump-dom", "screenshot")


def load(page: Path, mode: str, scratch: Path) -> float:
    """Seconds for a new headless Chromium to open ``page`` and dump its DOM or screenshot it."""
    with tempfile.TemporaryDirectory(dir=scratch) as profile:
        flags = [
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            "--force-color-profile=srgb",
            f"--user-data-dir={profile}",
            "--window-size=1200,1800",
        ]
        action = (
            ["--dump-dom"] if mode == "dump-dom" else [f"--screenshot={Path(profile) / 'p.png'}"]
        )
        started = time.perf_counter()
        done = subprocess.run(
            [CHROMIUM, *flags, *action, page.as_uri()],
            capture_output=True,
            timeout=300,
            check=False,
        )
        seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(
            f"chromium failed on {page}: {done.stderr.decode(errors='replace')[-800:]}"
        )
    return seconds


def _machine() -> str:
    memory_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    version = subprocess.run(
        [CHROMIUM, "--version"], capture_output=True, text=True, check=False
    ).stdout.strip()
    load_average = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    return (
        f"Machine: {os.cpu_count()} cores, {memory_gib:.0f} GiB, Python "
        f"{platform.python_version()}, {version}; load average at the end: {load_average}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--templates", type=int, nargs="+", default=[128, 10_000])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--page", action="append", default=[], help="another page to open")
    options = parser.parse_args()
    if not Path(CHROMIUM).exists():
        raise SystemExit(f"{CHROMIUM} is missing: apt-get install chromium")

    with tempfile.TemporaryDirectory() as folder:
        scratch = Path(folder)
        pages: dict[str, Path] = {"empty page": scratch / "empty.html"}
        pages["empty page"].write_text(EMPTY, encoding="utf-8")
        rendering: dict[str, tuple[float, int]] = {}
        for count in options.templates:
            corpus = scratch / f"corpus-{count}"
            generator.write(str(corpus), count)
            files = discovery.discover([str(corpus / generator.TEMPLATES_DIR)])
            result = engine.audit(AuditInputs(files), AuditOptions())
            seconds = []
            for _ in range(options.runs):
                started = time.perf_counter()
                page = report.render_html(result)
                seconds.append(time.perf_counter() - started)
            name = f"{count:,} templates"
            pages[name] = scratch / f"report-{count}.html"
            pages[name].write_text(page, encoding="utf-8")
            rendering[name] = (statistics.median(seconds), len(result.findings))
        for extra in options.page:
            pages[Path(extra).name] = Path(extra).resolve()

        names = list(pages)
        times: dict[tuple[str, str], list[float]] = {(n, m): [] for n in names for m in MODES}
        for round_index in range(options.runs):
            shift = round_index % len(names)
            for name in [*names[shift:], *names[:shift]]:
                for mode in MODES:
                    times[(name, mode)].append(load(pages[name], mode, scratch))

        empty = {mode: statistics.median(times[("empty page", mode)]) for mode in MODES}
        print(f"Medians of {options.runs} runs; Chromium opens each page as a new process.\n")
        print(
            "| page | findings | render s | bytes | dump-dom s | beyond empty s "
            "| screenshot s | beyond empty s |"
        )
        print("|---|---:|---:|---:|---:|---:|---:|---:|")
        for name in names:
            render_s, findings = rendering.get(name, (float("nan"), 0))
            dump = statistics.median(times[(name, "dump-dom")])
            shot = statistics.median(times[(name, "screenshot")])
            print(
                f"| {name} | {findings:,} | {render_s:.2f} | {pages[name].stat().st_size:,} "
                f"| {dump:.2f} | {dump - empty['dump-dom']:.2f} "
                f"| {shot:.2f} | {shot - empty['screenshot']:.2f} |"
            )
        print()
        print(_machine())


if __name__ == "__main__":
    main()
