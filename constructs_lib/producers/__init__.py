"""What sends into a ResilientQueue: the AWS services that produce to it and the operators who
redrive its dead letters (``services``), the calls that add them (``calls``), and SNS's own
delivery failures (``sns_delivery_failures``)."""
