import aws_cdk as cdk

from constructs_lib import ConfigurationError, ResilientQueue

app = cdk.App()
stack = cdk.Stack(app, "Orders")

try:
    ResilientQueue(
        stack,
        "Broken",
        retention_period=cdk.Duration.days(14),  # not shorter than the DLQ's 14 days
        content_based_deduplication=True,  # FIFO only, and this queue is standard
    )
except ConfigurationError as error:
    # Every problem at once, each with the prop, the value, the rule and the fix.
    assert [p.prop for p in error.problems] == ["retention_period", "content_based_deduplication"]
    print(error)

ResilientQueue(stack, "Orders", retention_period=cdk.Duration.days(7))

app.synth()
