"""Rack acceptance: parse what the tools on a node report and compare it with the cluster file."""
