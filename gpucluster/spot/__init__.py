"""Spot: the node agent that acts on EC2 notices, and the checkpoint contract jobs get."""
