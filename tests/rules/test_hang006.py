"""HANG006 interrupted-stall: a run stuck in a wait and then interrupted is a hang."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import autopsy
from autopsy.api import diagnose
from autopsy.model import Family

STUCK_LOADER = """
import time, torch
from torch.utils.data import DataLoader, Dataset
class Slow(Dataset):
    def __len__(self): return 8
    def __getitem__(self, i):
        print("READY", flush=True)  # the worker holds the batch: the main process waits
        time.sleep(120); return torch.zeros(2)
print("step 1 loss 2.31", flush=True)
for batch in DataLoader(Slow(), num_workers=1):
    pass
"""

BUSY = """
print("step 1 loss 2.31", flush=True)
print("READY", flush=True)
x = 0
while True:
    x = (x * 31 + 7) % 1000003
"""


def _interrupted(tmp_path: Path, script: str) -> Path:
    """Run ``script``, interrupt it (Ctrl-C) once it is going, and keep what it printed."""
    src = tmp_path / "train.py"
    src.write_text(script)
    # Ctrl-C's default action in the child even when pytest itself ignores SIGINT (a
    # background job of a non-interactive shell does, and its children inherit that)
    proc = subprocess.Popen([sys.executable, str(src)], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert proc.stdout is not None
    guard = threading.Timer(120, proc.kill)  # a script that never gets going fails, not hangs
    guard.start()
    try:
        lines = []
        for line in proc.stdout:
            lines.append(line)
            if line.startswith("READY"):
                break
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=60)
    finally:
        guard.cancel()
        if proc.poll() is None:
            proc.kill()
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "train.log").write_text("".join(lines) + out)
    return run_dir


def test_fires_on_a_dataloader_wait_interrupted_by_ctrl_c(tmp_path: Path) -> None:
    run_dir = _interrupted(tmp_path, STUCK_LOADER)
    assert "KeyboardInterrupt" in (run_dir / "train.log").read_text()
    d = diagnose(autopsy.load_run(run_dir))
    assert (d.verdict.code, d.verdict.family, d.verdict.cause) == (
        "HANG006", Family.HANG, "dataloader_hang")
    assert not [f for f in d.findings if f.family is Family.CRASH]


def test_near_miss_passes_when_the_interrupted_process_was_computing(tmp_path: Path) -> None:
    run_dir = _interrupted(tmp_path, BUSY)
    assert "KeyboardInterrupt" in (run_dir / "train.log").read_text()
    d = diagnose(autopsy.load_run(run_dir))
    assert not [f for f in d.findings if f.code == "HANG006"]
