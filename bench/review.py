"""Time `gpucluster review` of a one-line change to the example against one `cdk synth` of it.

Builds a temporary git repository from the example (as tests/review does), commits it, changes one
line (the cloud partition's MaxTime), then times, interleaved N times: one `npx cdk synth` of the
example with the CLI (what a user runs), a cold review (no synth cache: base and head synthesized,
here in one process because only the cluster file differs) and a warm review (base out dir reused,
as on a second push to the same pull request). Prints the medians and the
ratios (target: cold review ≤ 1.5 × one synth). Figures only; not a pass/fail test.

    .venv/bin/python bench/review.py [--runs 3]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gpucluster.review import review  # noqa: E402  (after the path fix so a bare checkout works)
from gpucluster.review.gitrepo import tree_at  # noqa: E402
from gpucluster.review.synth import cdk_cli, inputs_hash, synth_env  # noqa: E402
from tests.review.conftest import build_repo  # noqa: E402  (the same repository the tests use)

TARGET_RATIO = 1.5
EXAMPLE = "clusters/example.yaml"


def synth_seconds(repo: Path, outdir: Path) -> float:
    """Wall time of one `cdk synth -q` of the example into a fresh directory."""
    shutil.rmtree(outdir, ignore_errors=True)
    command = [*cdk_cli(ROOT / "node_modules"), "synth", "-q", "-c", f"cluster={EXAMPLE}", "-o", str(outdir)]
    start = time.perf_counter()
    result = subprocess.run(command, cwd=repo, env=synth_env(), capture_output=True, text=True, check=False)
    if result.returncode != 0:
        sys.exit(f"synth failed:\n{result.stderr[-3000:]}")
    return time.perf_counter() - start


def review_seconds(repo: Path, cache: Path) -> float:
    """Wall time of one review of the work tree against `base`, with what `cache` already holds."""
    start = time.perf_counter()
    result = review(repo, "base", cache_dir=cache)
    elapsed = time.perf_counter() - start
    if not result.clusters:
        sys.exit("the review found no change: the one-line edit did not apply")
    return elapsed


def one_line_change(repo: Path) -> None:
    """Edit one line of the example in the work tree: the cloud partition's MaxTime."""
    path = repo / EXAMPLE
    text = path.read_text()
    path.write_text(text.replace('max_time: "2-00:00:00"', 'max_time: "1-00:00:00"', 1))


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    times: dict[str, list[float]] = {"synth": [], "cold": [], "warm": []}
    with tempfile.TemporaryDirectory() as tmp:
        repo = build_repo(Path(tmp) / "repo")
        one_line_change(repo)
        cache = Path(tmp) / "cache"
        base_hash = _base_hash(repo)
        for run in range(args.runs):
            times["synth"].append(synth_seconds(repo, Path(tmp) / "synth"))
            shutil.rmtree(cache, ignore_errors=True)
            times["cold"].append(review_seconds(repo, cache))
            for out in cache.glob("*"):  # a new push: the head synth is new, the base one is kept
                if out.name != base_hash:
                    shutil.rmtree(out)
            times["warm"].append(review_seconds(repo, cache))
            print(
                f"run {run + 1}: synth {times['synth'][-1]:.2f} s, review cold {times['cold'][-1]:.2f} s,"
                f" warm {times['warm'][-1]:.2f} s"
            )
    synth, cold, warm = (statistics.median(times[k]) for k in ("synth", "cold", "warm"))
    print(f"one cdk synth of the example:   {synth:.2f} s (median of {args.runs})")
    print(f"review, cold (base and head):   {cold:.2f} s  ratio {cold / synth:.2f} (target ≤ {TARGET_RATIO})")
    print(f"review, base out dir reused:    {warm:.2f} s  ratio {warm / synth:.2f}")


def _base_hash(repo: Path) -> str:
    """The synth-cache key of the base commit's example."""
    with tree_at(repo, "base") as tree:
        return inputs_hash(tree, EXAMPLE)


if __name__ == "__main__":
    main()
