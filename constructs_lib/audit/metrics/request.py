"""What ``--metrics`` asks for: where the metric stream output is, and the window of days.

No pyarrow here: the command line validates its options before anything is read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

# CloudWatch keeps 1-minute data points 15 days, 5-minute ones 63 days and 1-hour ones 455 days
# (https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_GetMetricStatistics.html):
# the default window of 14 days is what CloudWatch still holds at 1-minute resolution, and no
# window is longer than the longest retention.
DEFAULT_WINDOW_DAYS: Final = 14
MIN_WINDOW_DAYS: Final = 1
MAX_WINDOW_DAYS: Final = 455
DAY_MS: Final = 86_400_000
HOUR_MS: Final = 3_600_000


@dataclass(frozen=True)
class MetricsRequest:
    """``--metrics LOCATION`` (a file, a folder or ``s3://bucket/prefix``) and
    ``--metrics-window DAYS``."""

    location: str
    window_days: int = DEFAULT_WINDOW_DAYS


def window(end: int | None, window_days: int) -> tuple[int | None, int | None]:
    """(start, end) in epoch milliseconds of the window ending at the newest data point
    ``end``: a data point counts when ``start < timestamp <= end``. (None, None) without one."""
    return (None, None) if end is None else (end - window_days * DAY_MS, end)


class MetricsInputError(ValueError):
    """A ``--metrics`` location that cannot be listed; the message names it, why, and the fix.
    A usage error: nothing has been read yet."""
