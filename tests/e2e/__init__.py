"""End-to-end tests: the real CDK CLI deploys the constructs to a local AWS emulator."""
