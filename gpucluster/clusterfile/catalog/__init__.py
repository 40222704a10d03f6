"""Reference figures: hardware (GPUs, fabrics, instance types), prices and acceptance thresholds."""
