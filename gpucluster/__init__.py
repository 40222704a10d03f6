"""gpucluster: one cluster file for GPU training clusters that span AWS and on-prem racks."""

__version__ = "0.1.0"
