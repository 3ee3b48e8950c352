"""The dialects templates come in: plain CloudFormation, SAM, and CDK cloud assemblies."""
