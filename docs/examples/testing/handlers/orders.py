"""The consumer the example stack deploys: it processes every message of the batch."""

from typing import Any


def handler(event: dict[str, Any], context: object) -> dict[str, list[str]]:
    return {"batchItemFailures": []}
