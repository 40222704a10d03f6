"""Base and head synths of one cluster file: reused when cached, one process when the code is shared.

A pull request that edits only a cluster file leaves the app, stacks and templates alone; then both
synths run in one Python process (synth_runner.py), which starts the jsii runtime and loads the CDK
once instead of twice. Otherwise, or when that fails, each tree's app runs on its own, in parallel.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from gpucluster.review.synth import (
    SynthResult,
    app_settings,
    cached,
    code_hash,
    inputs_hash,
    keep,
    staging_dir,
    synth,
    synth_env,
)

RUNNER = Path(__file__).with_name("synth_runner.py")


def synth_both(
    base: Path, head: Path, cluster_file: str, *, cache_dir: Path
) -> tuple[SynthResult, SynthResult]:
    """(base, head) synth results of cluster_file, each from the cache when its inputs are unchanged."""
    codes = {base: code_hash(base), head: code_hash(head)}
    results: dict[Path, SynthResult] = {}
    todo: list[Path] = []
    for tree in (base, head):
        if not (tree / cluster_file).is_file():
            results[tree] = SynthResult()
        elif (hit := cached(tree, cluster_file, cache_dir, code=codes[tree])) is not None:
            results[tree] = hit
        else:
            todo.append(tree)
    keys = {tree: inputs_hash(tree, cluster_file, code=codes[tree]) for tree in todo}
    if len(todo) == 2 and keys[base] == keys[head]:  # the same inputs: one synth serves both
        results[base] = results[head] = synth(head, cluster_file, cache_dir=cache_dir)
        return results[base], results[head]
    if len(todo) == 2 and codes[base] == codes[head]:
        results.update(_in_one_process(head, todo, cluster_file, cache_dir, keys))
        todo = [tree for tree in todo if tree not in results]
    with ThreadPoolExecutor(max_workers=2) as pool:
        alone = list(pool.map(lambda t: synth(t, cluster_file, cache_dir=cache_dir), todo))
    results.update(zip(todo, alone, strict=True))
    return results[base], results[head]


def _in_one_process(
    code_tree: Path, trees: list[Path], cluster_file: str, cache_dir: Path, keys: dict[Path, str]
) -> dict[Path, SynthResult]:
    """Synthesize trees with code_tree's app in one process; a tree that failed is left out."""
    command, context = app_settings(code_tree, cluster_file)
    if not (command and command[-1] == "app.py" and Path(command[0]).name.startswith("python")):
        return {}  # an app the runner cannot drive: run it the way cdk.json says
    staging = {tree: staging_dir(cache_dir, keys[tree]) for tree in trees}
    pairs = [str(part) for tree in trees for part in (tree, staging[tree])]
    result = subprocess.run(
        [sys.executable, str(RUNNER), str(code_tree), json.dumps(context), *pairs],
        cwd=code_tree,
        env=synth_env(),
        capture_output=True,
        text=True,
        check=False,
    )
    failed = _failed_out_dirs(result) if result.returncode == 0 else set(pairs[1::2])
    done: dict[Path, SynthResult] = {}
    for tree in trees:
        if str(staging[tree]) in failed:
            shutil.rmtree(staging[tree], ignore_errors=True)
        else:
            done[tree] = keep(staging[tree], cache_dir, keys[tree], cluster_file)
    return done


def _failed_out_dirs(result: subprocess.CompletedProcess[str]) -> set[str]:
    lines = result.stdout.strip().splitlines()
    try:
        return set(json.loads(lines[-1])) if lines else set()
    except ValueError:
        return set()
