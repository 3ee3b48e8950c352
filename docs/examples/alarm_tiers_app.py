import aws_cdk as cdk
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns

from constructs_lib import ResilientQueue
from constructs_lib.alarms import Tier

app = cdk.App()
stack = cdk.Stack(app, "Billing")
pager = sns.Topic(stack, "Pager", enforce_ssl=True)  # subscribed by the paging service
tickets = sns.Topic(stack, "Tickets", enforce_ssl=True)  # subscribed by the ticket system
invoice = lambda_.Function(
    stack,
    "Invoice",
    runtime=lambda_.Runtime.PYTHON_3_14,
    handler="index.handler",
    code=lambda_.Code.from_inline("def handler(event, context):\n    return None\n"),
    timeout=cdk.Duration.seconds(30),
)

invoices = ResilientQueue(
    stack,
    "Invoices",
    queue_name="invoices",
    critical_actions=[actions.SnsAction(pager)],  # dead letters, expiry, all messages failing
    warning_actions=[actions.SnsAction(tickets)],  # in flight, some messages failing
    ok_actions=[actions.SnsAction(pager)],  # "resolved" on the page
    composite_alarm=True,  # one page, "invoices-critical", whichever critical alarm fired
)
invoices.add_lambda_consumer(invoice)  # its critical alarm joins the composite at synth
invoices.add_dashboard("invoices")  # alarm states by tier, the composite first

tiers = invoices.alarm_tiers
assert tiers.composite_alarm is not None
for tier, alarms in tiers.by_tier().items():
    names = ", ".join(a.node.id for a in alarms)
    cdk.CfnOutput(stack, f"{tier.value.title()}Alarms", value=names)
assert [a.node.id for a in tiers.by_tier()[Tier.WARNING]] == [
    "InFlightAlarm",
    "FailedMessagesAlarm",
]

app.synth()
