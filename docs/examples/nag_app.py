import aws_cdk as cdk
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_sns as sns
from cdk_nag import AwsSolutionsChecks

from constructs_lib import ResilientQueue
from constructs_lib.checks import QueueResilienceChecks

app = cdk.App()
stack = cdk.Stack(app, "Orders")
topic = sns.Topic(stack, "OnCall", enforce_ssl=True)
ResilientQueue(stack, "Orders", alarm_actions=[actions.SnsAction(topic)])

# Both judge the whole app at synth, side by side: cdk-nag's packs and the queue rules (which
# also judge queues built without ResilientQueue). Errors fail the synth.
cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app), QueueResilienceChecks())
app.synth()
