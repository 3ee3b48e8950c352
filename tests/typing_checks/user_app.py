"""A user's app, type-checked by ``make typecheck`` (mypy --strict) as a user's mypy sees the
package: each wrong call carries a ``type: ignore[<code>]`` comment, and strict mode's
``warn_unused_ignores`` fails the check when the package stops rejecting that call (its
annotation loosened to ``Any``, say). Never run: only read by mypy."""

from __future__ import annotations

from typing import assert_type

import aws_cdk as cdk
from aws_cdk import aws_lambda as lambda_

from constructs_lib import LambdaConsumer, ResilientQueue

app = cdk.App()
stack = cdk.Stack(app, "Orders")
worker = lambda_.Function(
    stack,
    "Worker",
    runtime=lambda_.Runtime.PYTHON_3_14,
    handler="index.handler",
    code=lambda_.Code.from_inline("def handler(event, context):\n    return None\n"),
    timeout=cdk.Duration.seconds(30),
)

# The right types: no error, and the results typed.
orders = ResilientQueue(stack, "Orders", fifo=True, max_receive_count=5)
assert_type(orders.add_lambda_consumer(worker, batch_size=10), LambdaConsumer)
assert_type(orders.visibility_timeout, int)

# Wrong types: each rejected before the app runs.
ResilientQueue(stack, "Text", max_receive_count="5")  # type: ignore[arg-type]
ResilientQueue(stack, "Fraction", max_receive_count=5.5)  # type: ignore[arg-type]
orders.add_lambda_consumer(worker, batch_size="10")  # type: ignore[arg-type]
