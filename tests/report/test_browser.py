"""The HTML report in a real browser: headless Chromium shows the verdict and every plot loads.

Each report is rendered by the CLI, then opened twice by Chromium: once as written, for a
full-page screenshot (kept under the test's tmp dir, and copied to
``$AUTOPSY_TEST_ARTIFACTS`` when that is set); once as a probe copy, the same page with
a small inline script appended (the report itself has none, and its Content-Security-Policy
forbids one, so the copy relaxes it), which writes what the browser saw into the DOM:
each image's natural width, the verdict's text and position. ``--dump-dom`` returns it.

Skipped, with the reason, when no chromium / chromium-browser / google-chrome binary is
found or the one found cannot render a page here. ``.ci/run`` installs Chromium from the
distribution's packages; ``$AUTOPSY_CHROMIUM`` names another binary.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from repo_paths import SAMPLE_RUNS

from autopsy.cli import cli

BINARIES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")
WIDTH = 1100
PROBE = """
<script>
window.addEventListener("load", () => {
  const imgs = Array.from(document.images).map(i => ({
    plot: i.dataset.plot, natural: i.naturalWidth, complete: i.complete}));
  const v = document.getElementById("verdict");
  const r = v ? v.getBoundingClientRect() : null;
  const out = {images: imgs, verdict: v ? v.innerText : null, verdict_top: r ? r.top : null,
               verdict_visible: r ? (r.height > 0 && r.top < window.innerHeight) : false,
               height: document.documentElement.scrollHeight};
  const pre = document.createElement("pre");
  pre.id = "probe";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>
"""


def find_browser() -> str | None:
    """The Chromium binary to use: ``$AUTOPSY_CHROMIUM``, else the first on PATH."""
    named = os.environ.get("AUTOPSY_CHROMIUM")
    if named:
        return shutil.which(named) or (named if Path(named).is_file() else None)
    for name in BINARIES:
        found = shutil.which(name)
        if found:
            return found
    return None


def chromium(binary: str, profile: Path, *args: str, timeout: int = 90
             ) -> subprocess.CompletedProcess[str]:
    """Run headless Chromium once, with its own throw-away profile."""
    command = [binary, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
               "--hide-scrollbars", "--disable-extensions", "--mute-audio",
               f"--user-data-dir={profile}", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "HOME": str(profile)})


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    binary = find_browser()
    if binary is None:
        pytest.skip("no headless browser: none of " + ", ".join(BINARIES) + " is on PATH "
                    "(.ci/run installs chromium with apt-get; or set AUTOPSY_CHROMIUM)")
    work = tmp_path_factory.mktemp("chromium")
    page = work / "hello.html"
    page.write_text("<!DOCTYPE html><p id=x>hello</p>")
    try:
        done = chromium(binary, work / "profile", "--dump-dom", page.as_uri())
    except (OSError, subprocess.TimeoutExpired) as exc:
        pytest.skip(f"{binary} cannot run here: {exc}")
    if "hello" not in done.stdout:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        pytest.skip(f"{binary} cannot render a page here (exit {done.returncode}): {last}")
    return binary, work


def probe(binary: str, work: Path, report: Path) -> dict:
    """Open a probe copy of ``report``; return what the inline script saw."""
    text = report.read_text(encoding="utf-8")
    text = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", text)
    copy = work / f"probe_{report.name}"
    copy.write_text(text.replace("</body>", PROBE + "</body>"), encoding="utf-8")
    done = chromium(binary, work / "profile", "--virtual-time-budget=10000",
                    f"--window-size={WIDTH},900", "--dump-dom", copy.as_uri())
    found = re.search(r'<pre id="probe">(.*?)</pre>', done.stdout, flags=re.S)
    assert found, f"the probe did not run: exit {done.returncode}: {done.stderr[-500:]}"
    raw = found.group(1).replace("&quot;", '"').replace("&lt;", "<").replace("&gt;", ">")
    return json.loads(raw.replace("&amp;", "&"))


def screenshot(binary: str, work: Path, report: Path, height: int) -> Path:
    """A full-page PNG of ``report`` as written; copied to $AUTOPSY_TEST_ARTIFACTS if set."""
    shot = work / f"{report.stem}.png"
    chromium(binary, work / "profile", f"--window-size={WIDTH},{min(max(height, 600), 16000)}",
             f"--screenshot={shot}", report.as_uri())
    assert shot.is_file() and shot.stat().st_size > 10_000, "no screenshot written"
    assert shot.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    artifacts = os.environ.get("AUTOPSY_TEST_ARTIFACTS")
    if artifacts:
        Path(artifacts).mkdir(parents=True, exist_ok=True)
        shutil.copy2(shot, Path(artifacts) / shot.name)
    return shot


def render(tmp_path: Path, command: str, run: Path, name: str) -> Path:
    out = tmp_path / name
    result = CliRunner().invoke(cli, [command, str(run), "-o", str(out)],
                                catch_exceptions=False)
    assert result.exit_code in (0, 1), result.output
    return out


@pytest.mark.parametrize("command,run,verdict,plots", [
    ("analyze", "nan_after_grad_spike", "VERDICT: nan_inf · cause lr_too_high · step 8",
     ["loss", "grad_norm", "learning_rate", "step_time"]),
    ("ranks", "ddp_rank_stall_timeout", "VERDICT: hang · cause dead_rank · step 10 · rank 1",
     ["ranks", "loss", "grad_norm", "learning_rate", "step_time"]),
])
def test_report_in_headless_chromium(browser: tuple[str, Path], tmp_path: Path, command: str,
                                     run: str, verdict: str, plots: list[str]) -> None:
    binary, work = browser
    report = render(tmp_path, command, SAMPLE_RUNS / run, f"{run}.html")
    seen = probe(binary, work, report)
    assert verdict in seen["verdict"]
    assert seen["verdict_visible"], seen["verdict_top"]
    assert [img["plot"] for img in seen["images"]] == plots
    for img in seen["images"]:
        assert img["complete"] and img["natural"] > 0, img
    shot = screenshot(binary, tmp_path, report, int(seen["height"]))
    assert shot.stat().st_size > 50_000


def test_fleet_page_in_headless_chromium(browser: tuple[str, Path], tmp_path: Path) -> None:
    """``autopsy fleet -o fleet.html``: the tables and the failures-over-time plot load."""
    binary, work = browser
    root = tmp_path / "fleet"
    for name in ("ddp_rank_exception", "diverging_finite", "healthy_hf_trainer",
                 "nan_after_grad_spike"):
        shutil.copytree(SAMPLE_RUNS / name, root / name)
    page = tmp_path / "fleet.html"
    result = CliRunner().invoke(cli, ["fleet", str(root), "-o", str(page), "--jobs", "1",
                                      "--no-cache"], catch_exceptions=False)
    assert result.exit_code == 1, result.output
    seen = probe(binary, work, page)
    assert len(seen["images"]) == 1
    assert seen["images"][0]["complete"] and seen["images"][0]["natural"] > 0, seen["images"]
    shot = screenshot(binary, tmp_path, page, int(seen["height"]))
    assert shot.stat().st_size > 20_000
