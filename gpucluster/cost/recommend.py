"""Where capacity should live, by the field guides' utilization rule checked against the costs.

The two field guides this product grew from agree on the shape: mostly idle → cloud, sustained high
utilization → on-prem, in between → hybrid (steady base on-prem, bursts and experiments in AWS).
Their thresholds differ (under 50% / over 75% in one, 80%+ in the other); the cluster file's
`economics.verdict` holds ours (default 50% and 75%). A rule of thumb never decides alone: when the
effective costs at the measured utilization contradict it, the costs win and the text says so.
Every verdict prints the utilization and the two costs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from gpucluster.clusterfile.model.economics import VerdictBands

Verdict = Literal["cloud", "on-prem", "hybrid"]
DEFAULT_BANDS = VerdictBands()


@dataclass(frozen=True)
class Recommendation:
    """A verdict with the utilization and the two effective costs that decided it."""

    verdict: Verdict
    utilization: float
    onprem_usd_per_gpu_hour: float | None
    cloud_market: str
    cloud_usd_per_gpu_hour: float
    break_even_utilization: float | None
    text: str


def rule_of_thumb(utilization: float, bands: VerdictBands = DEFAULT_BANDS) -> Verdict:
    """The guides' utilization bands: below cloud_below cloud, above onprem_above on-prem, else hybrid.

    The edges belong to hybrid: exactly cloud_below or exactly onprem_above is hybrid.
    """
    if utilization < bands.cloud_below:
        return "cloud"
    if utilization > bands.onprem_above:
        return "on-prem"
    return "hybrid"


def recommend(
    utilization: float,
    *,
    onprem_usd_per_gpu_hour: float | None,
    cloud_market: str,
    cloud_usd_per_gpu_hour: float,
    break_even_utilization: float | None,
    also: str | None = None,
    bands: VerdictBands = DEFAULT_BANDS,
) -> Recommendation:
    """Verdict from the rule, overruled by the costs where they disagree; text names the numbers."""
    costs = f"{cloud_market} ${cloud_usd_per_gpu_hour:.2f}/GPU-h"
    if onprem_usd_per_gpu_hour is None:
        text = (
            f"cloud: no on-prem racks declared; at {utilization:.0%} utilization {costs}"
            " is the cheapest steady market"
        )
        return Recommendation("cloud", utilization, None, cloud_market, cloud_usd_per_gpu_hour, None, text)
    rule = rule_of_thumb(utilization, bands)
    cheaper: Verdict = "on-prem" if onprem_usd_per_gpu_hour < cloud_usd_per_gpu_hour else "cloud"
    verdict: Verdict = rule if rule in ("hybrid", cheaper) else cheaper
    numbers = (
        f"at {utilization:.0%} utilization on-prem costs ${onprem_usd_per_gpu_hour:.2f}/GPU-h vs {costs}"
    )
    even = _break_even_text(cloud_market, cheaper, break_even_utilization, also)
    action = {
        "cloud": "run in AWS and scale to zero when idle",
        "on-prem": "run the steady load on the racks",
        "hybrid": "keep the steady base on-prem and burst to AWS (on-demand, or spot for checkpointed jobs)",
    }[verdict]
    overruled = f" (the utilization rule alone says {rule}; the costs overrule it)" if verdict != rule else ""
    text = f"{verdict}: {numbers}; {even}; {action}{overruled}"
    return Recommendation(
        verdict,
        utilization,
        onprem_usd_per_gpu_hour,
        cloud_market,
        cloud_usd_per_gpu_hour,
        break_even_utilization,
        text,
    )


def _break_even_text(cloud_market: str, cheaper: Verdict, break_even: float | None, also: str | None) -> str:
    if break_even is not None:
        text = f"on-prem breaks even with {cloud_market} at {break_even:.0%}"
    elif cheaper == "on-prem":
        text = f"on-prem is cheaper than {cloud_market} at every utilization"
    else:
        text = f"{cloud_market} is cheaper than on-prem at every utilization"
    return f"{text}; {also}" if also else text
