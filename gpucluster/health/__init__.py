"""Per-job node health: the checks rendered from the cluster file and the program that runs them on a node."""
