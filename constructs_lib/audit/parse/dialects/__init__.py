"""The dialects templates come in: plain CloudFormation, SAM, and CDK cloud assemblies.

Every dialect ends as plain CloudFormation read into flat rows by ``cloudformation``, with the
keys and edges of ``edges``, what crosses stacks in ``cross_stack``, the queues resources name in
``queue_targets`` and composite alarms in ``composite_alarms``. SAM is expanded first (``sam``:
the translator run offline in ``sam_offline``, includes in ``sam_includes``, the ids the author
wrote in ``sam_origins``); a cloud assembly's manifest names its stacks (``cdk_assembly``).
"""
