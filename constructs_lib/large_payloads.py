"""Large messages through S3, at run time: bodies the extended client stored in S3, resolved.

The construct side (``ResilientQueue(large_payloads=...)``) tells each consumer and producer
function where payloads live through these environment variables; this module reads them. Like
``constructs_lib.backoff_batch`` it imports no CDK.
"""

from __future__ import annotations

from typing import Final

# Set by the construct on each consumer and producer function it wires.
PAYLOAD_BUCKET_ENV: Final = "CONSTRUCTS_LIB_PAYLOAD_BUCKET"
# The key prefix under which this queue's payloads are written: the queue's name and a slash.
PAYLOAD_PREFIX_ENV: Final = "CONSTRUCTS_LIB_PAYLOAD_PREFIX"
# "true" where the consumer deletes a payload once its message is processed, else "false".
PAYLOAD_DELETE_ENV: Final = "CONSTRUCTS_LIB_PAYLOAD_DELETE"
