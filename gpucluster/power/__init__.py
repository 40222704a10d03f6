"""Slurm power saving for cloud nodes: the programs slurmctld runs to resume and suspend them."""
