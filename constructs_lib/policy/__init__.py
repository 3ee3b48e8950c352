"""Pure decisions about SQS -> Lambda settings, shared by the constructs, the in-app checks and the
fleet audit. No CDK, no Spark: plain numbers in, numbers or problems out."""
