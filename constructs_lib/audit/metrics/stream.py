"""Where metric stream output is, which of it the window needs, and one object's data points.

The work splits as it does for templates (``inputs/objects.py``): the driver lists (paths or
keys and sizes, never a body), and whoever aggregates reads and decodes one object at a time
(``read_points``: the local engine in its process, Spark on its executors). A location is a
file, a folder walked recursively, or ``s3://bucket/prefix``; every object under it is read,
whatever its name, and one that is not metric stream output is a problem, never skipped.

The window: the audit looks at the ``--metrics-window`` days up to the newest data point in the
input. Firehose puts each object under the UTC hour it delivered it in, ``YYYY/MM/DD/HH/``
(https://docs.aws.amazon.com/firehose/latest/dev/s3-object-name.html), and delivers within
minutes of a data point, so an object whose hour ended more than the window and one day before
the newest hour listed holds nothing the window needs: it is listed and counted, not read. A
key without such a prefix is always read.
"""

from __future__ import annotations

import calendar
import os
import re
from dataclasses import dataclass
from typing import Final

from constructs_lib.audit.inputs import objects, reading
from constructs_lib.audit.metrics.decode import (
    DEFAULT_STREAM_LIMITS,
    Decoded,
    StreamLimits,
    decode,
    empty_points,
)
from constructs_lib.audit.metrics.request import DAY_MS, HOUR_MS, MetricsInputError
from constructs_lib.audit.safety import ReadLimits, size_text

# The slack the window keeps before its start when it skips objects by their delivery hour:
# Firehose delivers within its buffering interval (at most 900 s) of receiving a data point.
PARTITION_SLACK_MS: Final = DAY_MS

# Firehose's default prefix: the UTC delivery hour, right before the object's name.
_HOUR_PREFIX = re.compile(r"(?:^|/)(\d{4})/(\d{2})/(\d{2})/(\d{2})/[^/]+$")


@dataclass(frozen=True)
class StreamObject:
    """One object to read: its path or ``s3://`` URL, its size, and the epoch milliseconds of
    the hour its Firehose prefix names (None without one)."""

    location: str
    size: int
    hour: int | None


def delivery_hour(key: str) -> int | None:
    """The start of the UTC hour of a ``.../YYYY/MM/DD/HH/name`` key, in epoch milliseconds."""
    match = _HOUR_PREFIX.search(key)
    if match is None:
        return None
    year, month, day, hour = (int(part) for part in match.groups())
    if not (1 <= month <= 12 and 1 <= day <= calendar.monthrange(year, month)[1] and hour < 24):
        return None
    return (calendar.timegm((year, month, day, hour, 0, 0)) * 1000) if year >= 1970 else None


def list_objects(location: str) -> list[StreamObject]:
    """Every object at ``location`` (a file, a folder, an ``s3://`` URL), in name order.
    MetricsInputError when the location does not exist or cannot be listed."""
    if objects.is_object_url(location):
        return _list_bucket(location)
    # Absolute: a Spark task reads from its own working directory, not the driver's.
    location = os.path.abspath(location)
    if os.path.isfile(location):
        return [StreamObject(location, os.stat(location).st_size, delivery_hour(location))]
    if not os.path.isdir(location):
        raise MetricsInputError(
            f"--metrics {location}: no such file or folder; give a metric stream's output "
            "folder, one of its objects, or s3://BUCKET/PREFIX/"
        )
    found: list[StreamObject] = []
    # Every path os.walk gives starts with the location: its rest is the key, cut rather than
    # computed by os.path.relpath, which was half the listing of a fleet's objects.
    prefix = location if location.endswith(os.sep) else location + os.sep
    for folder, subfolders, names in os.walk(location):
        subfolders.sort()
        for name in sorted(names):
            path = os.path.join(folder, name)
            try:
                size = os.stat(path).st_size
            except OSError:
                size = 0  # a dangling link: reading it says why
            relative = path[len(prefix) :].replace(os.sep, "/")
            found.append(StreamObject(path, size, delivery_hour(relative)))
    return found


def _list_bucket(url: str) -> list[StreamObject]:
    """The keys under ``url`` (that one object when it exists), through the S3 client of
    ``inputs/objects.py``: the same credentials, endpoint and error messages as templates."""
    try:
        bucket, key = objects._split(url)
        client_error, botocore_error = objects._botocore_errors()
    except (ValueError, ImportError) as error:
        raise MetricsInputError(f"--metrics {url}: {error}") from None
    try:
        client = objects._client()
        if key and not key.endswith("/"):
            try:
                head = client.head_object(Bucket=bucket, Key=key)
            except client_error as error:
                if objects._status(error) not in (403, 404):
                    raise
            else:
                return [StreamObject(url, int(head.get("ContentLength", 0)), delivery_hour(key))]
            key += "/"
        found: list[StreamObject] = []
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=key):
            for entry in page.get("Contents", []):
                name: str = entry["Key"]
                if name.endswith("/"):
                    continue  # a console-made "folder": an empty object, no data
                found.append(
                    StreamObject(
                        f"{objects.SCHEME}{bucket}/{name}",
                        int(entry.get("Size", 0)),
                        delivery_hour(name[len(key) :]),
                    )
                )
        return found
    except (client_error, botocore_error) as error:
        raise MetricsInputError(f"--metrics: {objects._store_error(url, error)}") from None


def within_window(
    listed: list[StreamObject], window_days: int
) -> tuple[list[StreamObject], list[StreamObject]]:
    """(objects to read, objects skipped): skipped are those whose delivery hour ended before
    the window could start, counted back from the newest delivery hour listed."""
    hours = [o.hour for o in listed if o.hour is not None]
    if not hours:
        return list(listed), []
    cut = max(hours) + HOUR_MS - window_days * DAY_MS - PARTITION_SLACK_MS
    read = [o for o in listed if o.hour is None or o.hour + HOUR_MS > cut]
    skipped = [o for o in listed if o.hour is not None and o.hour + HOUR_MS <= cut]
    return read, skipped


def read_points(
    location: str, size: int = 0, limits: StreamLimits = DEFAULT_STREAM_LIMITS
) -> Decoded:
    """One object's data points; what cannot be read is the result's problem, never raised.
    ``size`` is the listing's: an object listed over the cap is not fetched at all."""
    too_large = (
        f"not read: {{}}over the {size_text(limits.max_object_bytes)} a metric stream object "
        "may have (Firehose delivers at most 128 MiB at a time)"
    )
    if size > limits.max_object_bytes:
        return Decoded(empty_points(), 0, 0, too_large.format(f"{size:,} bytes, "))
    cap = ReadLimits(max_file_bytes=limits.max_object_bytes)
    try:
        if objects.is_object_url(location):
            data = objects.read_object(location, cap)
        else:
            data = reading.read_bytes(location, cap)
    except reading.SkippedFile as error:
        over = "size cap" in str(error) or "bytes" in str(error)
        return Decoded(empty_points(), 0, 0, too_large.format("") if over else str(error))
    except reading.ReadError as error:
        return Decoded(empty_points(), 0, 0, str(error))
    return decode(data, location, limits)
