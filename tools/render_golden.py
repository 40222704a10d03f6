"""The render golden files, tests/render/golden/<case>/, regenerated from the current templates.

One case per shipped cluster file (clusters/*.yaml) and one per cluster file that exists for a golden
case only (tests/render/cases/*.yaml). `make golden` (`python -m tools.render_golden`) rewrites them;
review the diff before committing. tests/render/test_golden.py fails while any file differs.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from gpucluster.clusterfile import load
from gpucluster.render.output import render_all

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "render" / "golden"
# Cluster files that exist for a golden case only (e.g. a rack with a retired node's gap).
CASES = ROOT / "tests" / "render" / "cases"


def golden_cases() -> dict[str, Path]:
    """One golden case per shipped cluster file, and one per file in tests/render/cases/."""
    files = sorted((ROOT / "clusters").glob("*.yaml")) + sorted(CASES.glob("*.yaml"))
    return {p.stem: p for p in files}


def rendered(cluster_file: Path) -> dict[str, str]:
    """Every file of a cluster, as `gpucluster render` writes it."""
    source = str(cluster_file.relative_to(ROOT))
    return render_all(load(cluster_file).cluster, source)


def main() -> None:
    """Rewrite tests/render/golden/<case>/ from the current templates."""
    for case, path in golden_cases().items():
        target = GOLDEN / case
        shutil.rmtree(target, ignore_errors=True)
        for relative, text in rendered(path).items():
            out = target / relative
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(text, encoding="utf-8")
        print(f"regenerated {target.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
