"""Make the README's screenshot of an HTML report (docs/img/report.png) with headless Chromium.

    python bench/screenshot.py [RUN_DIR] [-o docs/img/report.png] [--height 1500]

Renders ``autopsy analyze RUN_DIR -o report.html`` in a temporary folder (the run
directory is only read) and photographs the top of the page: the verdict, its evidence
and advice, and the first plots. Needs chromium, chromium-browser or google-chrome on
PATH (or ``$AUTOPSY_CHROMIUM``); the same invocation as tests/report/test_browser.py.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BINARIES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")


def find_browser() -> str | None:
    """``$AUTOPSY_CHROMIUM``, else the first Chromium-like binary on PATH."""
    named = os.environ.get("AUTOPSY_CHROMIUM")
    if named:
        return shutil.which(named) or named
    return next((found for name in BINARIES if (found := shutil.which(name))), None)


def main(argv: list[str] | None = None) -> int:
    """Render the report, photograph it, write the PNG; return the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", nargs="?", default="sample_runs/nan_after_grad_spike",
                        help="run directory (relative to the repository, or absolute)")
    parser.add_argument("-o", "--output", default=str(REPO / "docs" / "img" / "report.png"))
    parser.add_argument("--width", type=int, default=1040)
    parser.add_argument("--height", type=int, default=1500)
    args = parser.parse_args(argv)
    browser = find_browser()
    if browser is None:
        print("screenshot: no chromium / chromium-browser / google-chrome on PATH",
              file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        page = Path(tmp) / "report.html"
        done = subprocess.run([sys.executable, "-m", "autopsy", "analyze", args.run, "-o",
                               str(page)], capture_output=True, text=True, cwd=REPO)
        if done.returncode not in (0, 1):
            print(f"screenshot: autopsy failed: {done.stderr.strip()}", file=sys.stderr)
            return 2
        shot = Path(tmp) / "shot.png"
        subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu",
                        "--no-first-run", "--hide-scrollbars", f"--user-data-dir={tmp}/p",
                        f"--window-size={args.width},{args.height}", f"--screenshot={shot}",
                        page.as_uri()], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "HOME": tmp})
        if not shot.is_file():
            print("screenshot: the browser wrote no screenshot", file=sys.stderr)
            return 2
        out = Path(args.output)
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shot, out)
    print(f"wrote {out} ({out.stat().st_size:,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
