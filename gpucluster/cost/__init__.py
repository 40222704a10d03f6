"""Cost truth: effective $/GPU-hour on-prem vs AWS markets, break-even, checkpoint interval, utilization."""

from gpucluster.cost.analysis import CostReport, MarketResult, build_report
from gpucluster.cost.checkpoint import CheckpointPlan, daly_interval_s, plan, young_interval_s
from gpucluster.cost.formulas import Curve, OnPremMonthly, break_even_utilization, onprem_monthly
from gpucluster.cost.inputs import CostInputError
from gpucluster.cost.recommend import Recommendation, recommend

__all__ = [
    "CheckpointPlan",
    "CostInputError",
    "CostReport",
    "Curve",
    "MarketResult",
    "OnPremMonthly",
    "Recommendation",
    "break_even_utilization",
    "build_report",
    "daly_interval_s",
    "onprem_monthly",
    "plan",
    "recommend",
    "young_interval_s",
]
