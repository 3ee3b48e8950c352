"""The app under test: one stack with a ResilientQueue and its consumer, built by a class that
the app and the tests both import (the tests build their own App, so each test gets a fresh one)."""

from pathlib import Path

import aws_cdk as cdk
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from constructs import Construct

from constructs_lib import ResilientQueue

HANDLERS = Path(__file__).parent / "handlers"


class OrdersStack(cdk.Stack):
    def __init__(self, scope: Construct, construct_id: str, *, max_receive_count: int = 5) -> None:
        super().__init__(scope, construct_id)
        topic = sns.Topic(self, "OnCall", enforce_ssl=True)
        worker = lambda_.Function(
            self,
            "Worker",
            runtime=lambda_.Runtime.PYTHON_3_14,
            handler="orders.handler",
            # an asset: its hash is in the template and changes with the handler's code
            code=lambda_.Code.from_asset(str(HANDLERS)),
            timeout=cdk.Duration.seconds(30),
        )
        self.orders = ResilientQueue(
            self,
            "Orders",
            max_receive_count=max_receive_count,
            alarm_actions=[actions.SnsAction(topic)],
        )
        self.orders.add_lambda_consumer(worker, batch_size=10)


if __name__ == "__main__":
    app = cdk.App()
    OrdersStack(app, "Orders")
    app.synth()
