"""ResilientQueue (``construct``) and what it is made of: the queue pair (``pair``), KMS keys
(``keys``), grants (``grants``), redrive (``redrive``), the dashboard (``dashboard``), how a
message names a resource (``naming``), large payloads in S3 (``payloads``: ``LargePayloads`` and
the bucket; ``payload_grants``: who writes and reads them), and how the construct's parts are
put together and kept in step (``assembly``)."""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from constructs_lib.queue.construct import ResilientQueue

__all__ = ["ResilientQueue"]


def __getattr__(name: str) -> Any:
    # The construct imports every package of the constructs, and most of them import this one's
    # `naming` or `keys`: importing the construct here would close a circle.
    if name == "ResilientQueue":
        return import_module("constructs_lib.queue.construct").ResilientQueue
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
