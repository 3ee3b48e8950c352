"""Launcher of the emulator: moto's server with the test-harness adapters registered.

Started by ``emulator.Emulator.start`` as ``python -m tests.e2e.emulator_server -H 127.0.0.1 -p
PORT`` (the arguments are moto's own). The adapters must live in the server process: the CDK CLI
and boto3 talk to it over loopback, so registering them in the pytest process would change
nothing they see.
"""

from __future__ import annotations

import sys

from moto import server

from . import emulator_adapters


def main(argv: list[str]) -> None:
    emulator_adapters.register()
    print(
        "emulator adapters registered: " + ", ".join(sorted(emulator_adapters.ADAPTERS)),
        flush=True,
    )
    server.main(argv)


if __name__ == "__main__":
    main(sys.argv[1:])
