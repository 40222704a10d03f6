"""GPU utilization measured by DCGM and Prometheus: what the racks and the cloud groups really did.

exposition.py reads what a node's dcgm-exporter serves (:9400/metrics); series.py reads Prometheus
range-query answers and the saved export; measure.py turns the engine-active series into available,
allocated, active and idle-while-allocated GPU-hours per node group, site and overall; prometheus.py
fetches them over the HTTP API; commands.py is `gpucluster utilization --prometheus/--export`.
docs/utilization.md explains the figures and which one decides the verdict.
"""

from __future__ import annotations

from gpucluster.utilization.measure import Figures, Measurement, measure
from gpucluster.utilization.series import ENGINE_ACTIVE, ExportError, Series, parse_matrix

__all__ = ["ENGINE_ACTIVE", "ExportError", "Figures", "Measurement", "Series", "measure", "parse_matrix"]
