"""A command's wall time and the machine's CPU time over it, from /proc/stat (all processes:
JVMs and daemons a test run starts are counted, which a child's rusage misses).

    python bench/cpu_time.py -- make test
    JAVA_TOOL_OPTIONS= python bench/cpu_time.py -- pytest tests/audit/inputs/test_repository_audit.py -k spark
"""

from __future__ import annotations

import os
import subprocess
import sys
import time


def _jiffies() -> tuple[int, int]:
    """(busy, total) clock ticks of all CPUs since boot."""
    with open("/proc/stat") as stat:
        user, nice, system, idle, iowait, irq, softirq, steal = map(
            int, stat.readline().split()[1:9]
        )
    busy = user + nice + system + irq + softirq + steal
    return busy, busy + idle + iowait


def main(argv: list[str]) -> int:
    command = argv[argv.index("--") + 1 :] if "--" in argv else argv
    if not command:
        sys.exit("usage: python bench/cpu_time.py -- COMMAND [ARGS...]")
    busy0, total0 = _jiffies()
    started = time.monotonic()
    returncode = subprocess.run(command, check=False).returncode
    wall = time.monotonic() - started
    busy1, total1 = _jiffies()
    ticks = os.sysconf("SC_CLK_TCK")
    share = (busy1 - busy0) / max(total1 - total0, 1)
    print(
        f"wall {wall:.0f} s, busy {share:.0%} of {os.cpu_count()} CPUs, "
        f"CPU time {(busy1 - busy0) / ticks:.0f} s, exit {returncode}",
        file=sys.stderr,
    )
    return returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
