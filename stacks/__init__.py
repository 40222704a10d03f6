"""CDK stacks for the AWS side of a cluster file: one stack per deployment unit."""
