"""Time `cdk synth` of the example cluster against a bare one-stack app with one p5 launch template.

Runs both N times, interleaved so drift hits both alike, and prints the medians and their ratio
(target: ratio ≤ 1.5). Figures only; not a pass/fail test.

    .venv/bin/python bench/synth.py [--runs 5] [--cluster clusters/example.yaml]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_RATIO = 1.5


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(
        CDK_DISABLE_CLI_TELEMETRY="true",
        PATH=f"{Path(sys.executable).parent}:{env.get('PATH', '')}",
    )
    return env


def synth_seconds(extra: list[str], outdir: Path) -> float:
    """Wall time of one `npx cdk synth -q` into a fresh output directory."""
    shutil.rmtree(outdir, ignore_errors=True)
    command = ["npx", "cdk", "synth", "-q", "-o", str(outdir), *extra]
    start = time.perf_counter()
    result = subprocess.run(command, cwd=ROOT, env=_env(), capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if result.returncode != 0:
        sys.exit(f"{' '.join(command)} failed:\n{result.stderr[-3000:]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--cluster", default="clusters/example.yaml")
    args = parser.parse_args()
    cluster_cmd = ["-c", f"cluster={args.cluster}"]
    bare_cmd = ["--app", f"{sys.executable} bench/bare_app.py"]
    times: dict[str, list[float]] = {"cluster": [], "bare": []}
    with tempfile.TemporaryDirectory() as tmp:
        for run in range(args.runs):
            times["cluster"].append(synth_seconds(cluster_cmd, Path(tmp) / "cluster"))
            times["bare"].append(synth_seconds(bare_cmd, Path(tmp) / "bare"))
            print(f"run {run + 1}: cluster {times['cluster'][-1]:.2f} s, bare {times['bare'][-1]:.2f} s")
    cluster, bare = statistics.median(times["cluster"]), statistics.median(times["bare"])
    ratio = cluster / bare
    print(f"cdk synth {args.cluster} (4 stacks, cdk-nag ×2 + our rules): median {cluster:.2f} s")
    print(f"cdk synth bare app (1 stack, 1 p5 launch template):        median {bare:.2f} s")
    verdict = "within" if ratio <= TARGET_RATIO else "ABOVE"
    print(f"ratio {ratio:.2f} ({verdict} target {TARGET_RATIO})")


if __name__ == "__main__":
    main()
