"""Whether this machine runs two CPU-bound processes as fast as one: the ceiling of any
two-worker figure measured on it.

    python bench/core_scaling.py [--runs 3]

Two kinds of work, each alone and then two side by side: a pure Python loop, and a NumPy sort
and arithmetic over arrays larger than the caches. Prints each one's wall seconds (medians of
``--runs``); on a machine whose two cores are its own, two side by side take as long as one.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

# What each child runs: its set-up (not timed), then its work (timed).
WORK = {
    "python loop": ("", "x = 0\nfor i in range(30_000_000):\n    x += i * i"),
    "numpy sort": (
        "import numpy as np\na = np.random.default_rng(1).random(50_000_000)",
        "for _ in range(10):\n    np.sort(a[:5_000_000])\n    b = a * 2.0 + 1.0",
    ),
}


def _child(setup: str, work: str) -> subprocess.Popen[str]:
    code = f"import time\n{setup}\nstarted = time.perf_counter()\n{work}\n"
    code += "print(time.perf_counter() - started)\n"
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)


def _seconds(processes: list[subprocess.Popen[str]]) -> list[float]:
    return [float(p.communicate()[0].strip()) for p in processes]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    print("| work | alone s | two side by side s |\n|---|---:|---:|")
    for name, (setup, work) in WORK.items():
        alone: list[float] = []
        pair: list[float] = []
        for _ in range(args.runs):
            alone += _seconds([_child(setup, work)])
            pair += _seconds([_child(setup, work), _child(setup, work)])
            time.sleep(0.1)
        print(f"| {name} | {statistics.median(alone):.2f} | {statistics.median(pair):.2f} |")


if __name__ == "__main__":
    main()
