"""The multi-rank sample runs: ``torchrun --standalone --nproc_per_node 4`` over gloo on CPU.

Each run launches :mod:`ddp_worker` (a tiny MLP under DDP, one timestamped
``step N loss X mean_loss X grad_norm X lr X`` line per step on every rank) with one failure
planted on one rank, in one of two log layouts:

- ``redirects``: ``--redirects 3 --log-dir <run>/logs``: every rank's stdout and stderr in
  ``logs/<run_id>/attempt_0/<rank>/{stdout,stderr}.log``, plus ``error.json`` (written by
  ``@record`` on the worker's ``main``); ``train.log`` holds torchrun's own output (the
  agent's warnings and the ``ChildFailedError`` block).
- ``tee``: ``--tee 3``: every rank's lines interleaved into ``train.log`` with torchrun's
  ``[defaultN]:`` prefixes (the per-rank copies torchrun also writes go to a temporary folder
  that is removed).

The self-checks here read the logs back with a few regexes on the worker's own line formats
and torchrun's ``ChildFailedError`` block, assert the situation really happened, and build the
label from what really happened: ``culprit_rank``, ``first_bad_step``, and per-rank facts
(``last_step``, ``first_error``, ``exitcode``), ``timed_out_ranks``,
``connection_closed_ranks``, ``sigterm_ranks``, and ``torchelastic_root_cause_rank`` (which
often names a victim).

``make.py`` registers :data:`SPECS` beside its single-process runs.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from spec import Spec  # the SPECS record (beside this file)

HERE = Path(__file__).resolve().parent
WORKER = HERE / "ddp_worker.py"
WORLD = 4
COLLECTIVE_TIMEOUT = 15  # seconds: init_process_group(timeout=...) of every run
LAUNCH_TIMEOUT = 120  # seconds: a launch that has not ended by then is killed (a failure)
LOG_NAME = "train.log"
LOG_DIR = "logs"

STEP_RE = re.compile(r"\bstep (\d+) loss (\S+) mean_loss (\S+) grad_norm (\S+) lr (\S+)")
TEE_RE = re.compile(r"^\[default(\d+)\]:(.*)$")
ERROR_RE = re.compile(r"^(?:\[rank\d+\]: )?(\w+(?:Error|Exception)): (.*)$")
BLOCK_RE = re.compile(
    r"rank\s+: (\d+) \(local_rank: \d+\)\n\s+exitcode\s+: (-?\d+) \(pid: \d+\)"
)
TIMEOUT_MARK = "Timed out waiting"
CLOSED_MARK = "Connection closed by peer"
MISMATCH_MARK = "Detected mismatch between collectives"


class RankCheckError(AssertionError):
    """A multi-rank run did not show the situation it was made for."""


def _require(cond: bool, what: str) -> None:
    """Fail loudly (whatever ``python -O`` says) when ``cond`` is false."""
    if not cond:
        raise RankCheckError(what)


# --------------------------------------------------------------------------------------------
# Launching (runs in make.py's child process, whose stdout/stderr is <run>/train.log)
# --------------------------------------------------------------------------------------------


def torchrun(output_dir: str, scenario: str, layout: str, steps: int, seed: int,
             env: dict[str, str] | None = None, plan: tuple[int, int] | None = None) -> None:
    """Launch the worker on 4 ranks; exits the process with torchrun's exit code if non-zero.

    ``output_dir`` is relative to the working directory (the parent of the output folder),
    so the paths torchrun prints (``--log-dir``, the script) are relative too.
    """
    run_env = dict(os.environ)
    run_env.pop("TORCH_DISTRIBUTED_DEBUG", None)
    run_env.update(env or {})
    tmp = None
    if layout == "redirects":
        logs = ["--redirects", "3", "--log-dir", f"{output_dir}/{LOG_DIR}"]
    else:
        tmp = tempfile.mkdtemp(prefix="torchelastic_tee_")
        logs = ["--tee", "3", "--log-dir", tmp]
    cmd = [
        sys.executable, "-m", "torch.distributed.run", "--standalone",
        "--nproc_per_node", str(WORLD), *logs,
        os.path.relpath(WORKER), scenario, "--steps", str(steps),
        "--timeout", str(COLLECTIVE_TIMEOUT), "--seed", str(seed),
    ]
    if plan is not None:
        cmd += ["--culprit-rank", str(plan[0]), "--event-step", str(plan[1])]
    sys.stdout.flush()
    try:
        rc = subprocess.run(cmd, env=run_env, timeout=LAUNCH_TIMEOUT, check=False).returncode
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
    if rc:
        raise SystemExit(rc)


# --------------------------------------------------------------------------------------------
# Reading the logs back (the self-checks)
# --------------------------------------------------------------------------------------------


def _read(path: Path) -> str:
    """A text file, undecodable bytes replaced."""
    return path.read_text(encoding="utf-8", errors="replace")


def rank_texts(run_dir: Path) -> dict[int, str]:
    """``{rank: its output}``: from the ``--log-dir`` files, else the ``[defaultN]:`` lines."""
    attempts = sorted((run_dir / LOG_DIR).glob("*/attempt_0"))
    if attempts:
        return {
            int(d.name): _read(d / "stdout.log") + _read(d / "stderr.log")
            for d in sorted(attempts[0].iterdir(), key=lambda d: int(d.name))
        }
    texts: dict[int, list[str]] = {}
    for line in _read(run_dir / LOG_NAME).splitlines():
        m = TEE_RE.match(line)
        if m:
            texts.setdefault(int(m.group(1)), []).append(m.group(2))
    return {rank: "\n".join(lines) for rank, lines in sorted(texts.items())}


def _steps(text: str) -> dict[int, dict[str, float]]:
    """``{step: {loss, mean_loss, grad_norm, lr}}`` from one rank's step lines."""
    out = {}
    for m in STEP_RE.finditer(text):
        out[int(m.group(1))] = {
            k: float(v) for k, v in zip(("loss", "mean_loss", "grad_norm", "lr"),
                                        m.groups()[1:], strict=True)
        }
    return out


def _first_error(text: str) -> str | None:
    """The first ``XxxError: message`` line of one rank (its prefix dropped), cut to 200."""
    for line in text.splitlines():
        m = ERROR_RE.match(line.strip())
        if m:
            return f"{m.group(1)}: {m.group(2)}"[:200]
    return None


def _elastic_block(run_dir: Path) -> tuple[dict[int, int], int | None]:
    """From torchrun's ChildFailedError block: ``{rank: exitcode}`` and the root-cause rank."""
    log = _read(run_dir / LOG_NAME)
    start = log.find("ChildFailedError")
    if start < 0:
        return {}, None
    block = log[start:]
    codes = {int(r): int(c) for r, c in BLOCK_RE.findall(block)}
    root_at = block.find("Root Cause (first observed failure)")
    root = BLOCK_RE.search(block, root_at) if root_at >= 0 else None
    return codes, int(root.group(1)) if root else None


def facts(run_dir: Path) -> dict[str, Any]:
    """What every rank showed: the label's per-rank facts and the rank groups."""
    texts = rank_texts(run_dir)
    _require(sorted(texts) == list(range(WORLD)), f"ranks found: {sorted(texts)}")
    codes, root = _elastic_block(run_dir)
    ranks = {}
    for rank, text in texts.items():
        steps = _steps(text)
        _require(bool(steps) or rank in codes, f"rank {rank} logged no step")
        ranks[str(rank)] = {
            "last_step": max(steps) if steps else None,
            "exitcode": codes.get(rank, 0),
            "first_error": _first_error(text),
        }
    timed_out = [r for r, t in texts.items() if TIMEOUT_MARK in t]
    closed = [r for r, t in texts.items() if CLOSED_MARK in t]
    return {
        "world_size": WORLD,
        "launcher": "torchrun --standalone --nproc_per_node 4",
        "backend": "gloo",
        "collective_timeout_s": COLLECTIVE_TIMEOUT,
        "log_layout": "redirects" if (run_dir / LOG_DIR).is_dir() else "tee",
        "ranks": ranks,
        "timed_out_ranks": timed_out,
        "connection_closed_ranks": closed,
        "sigterm_ranks": sorted(r for r, c in codes.items() if c == -15),
        "torchelastic_root_cause_rank": root,
    }


def _label(family: str, cause: str | list[str] | None, first_bad_step: int | None,
           culprit_rank: int | None, run_facts: dict[str, Any], **more: Any) -> dict[str, Any]:
    """A label: the four keys every label has, then what the run showed."""
    return {"family": family, "cause": cause, "first_bad_step": first_bad_step,
            "culprit_rank": culprit_rank, **more, **run_facts}


def _cascade(f: dict[str, Any], ranks: list[int]) -> bool:
    """Some rank timed out and each of ``ranks`` timed out or lost a peer that had.

    Which rank times out and which one instead sees ``Connection closed by peer`` (a peer
    that timed out a moment earlier and exited) varies from run to run.
    """
    ended = set(f["timed_out_ranks"]) | set(f["connection_closed_ranks"])
    return bool(f["timed_out_ranks"]) and set(ranks) <= ended


def _last_steps(f: dict[str, Any]) -> dict[int, int | None]:
    """``{rank: last logged step}``."""
    return {int(r): v["last_step"] for r, v in f["ranks"].items()}


# --------------------------------------------------------------------------------------------
# The runs: launch, check
# --------------------------------------------------------------------------------------------

HEALTHY_STEPS = 40
FAIL_STEPS = 30
EXCEPTION_RANK, EXCEPTION_STEP = 2, 15
STALL_RANK, STALL_STEP = 1, 10
MISMATCH_RANK, MISMATCH_STEP = 3, 8
SHORT_RANK, UNEVEN_STEPS = 0, 20
#: The default culprit rank and event step of each planted scenario.
DEFAULTS = {"exception": (EXCEPTION_RANK, EXCEPTION_STEP), "stall": (STALL_RANK, STALL_STEP),
            "mismatch": (MISMATCH_RANK, MISMATCH_STEP), "uneven": (SHORT_RANK, 0)}


def plan(p: Any, rank: int, step: int) -> tuple[int, int]:
    """The culprit rank and event step of a run: the Params' ``rank`` / ``event_step``,
    else the defaults given (``bench/variants.py`` moves the failure with them)."""
    return (rank if getattr(p, "rank", None) is None else p.rank,
            step if p.event_step is None else p.event_step)


def _train_healthy(output_dir: str, launch: int, p: Any) -> None:
    del launch
    torchrun(output_dir, "healthy", "tee", p.steps or HEALTHY_STEPS, p.seed)


def _train_exception(output_dir: str, launch: int, p: Any) -> None:
    del launch
    torchrun(output_dir, "exception", "redirects", p.steps or FAIL_STEPS, p.seed,
             plan=plan(p, EXCEPTION_RANK, EXCEPTION_STEP))


def _train_stall(output_dir: str, launch: int, p: Any) -> None:
    del launch
    torchrun(output_dir, "stall", "tee", p.steps or FAIL_STEPS, p.seed,
             plan=plan(p, STALL_RANK, STALL_STEP))


def _train_mismatch_detail(output_dir: str, launch: int, p: Any) -> None:
    del launch
    torchrun(output_dir, "mismatch", "tee", p.steps or FAIL_STEPS, p.seed,
             env={"TORCH_DISTRIBUTED_DEBUG": "DETAIL"}, plan=plan(p, MISMATCH_RANK, MISMATCH_STEP))


def _train_mismatch_silent(output_dir: str, launch: int, p: Any) -> None:
    del launch
    torchrun(output_dir, "mismatch", "redirects", p.steps or FAIL_STEPS, p.seed,
             plan=plan(p, MISMATCH_RANK, MISMATCH_STEP))


def _train_uneven(output_dir: str, launch: int, p: Any) -> None:
    del launch
    torchrun(output_dir, "uneven", "redirects", p.steps or UNEVEN_STEPS, p.seed,
             plan=plan(p, SHORT_RANK, 0))


def _check_healthy(run_dir: Path, p: Any) -> dict[str, Any]:
    """Every rank logs every step, ends cleanly; the all-reduced loss falls."""
    f = facts(run_dir)
    steps = p.steps or HEALTHY_STEPS
    texts = rank_texts(run_dir)
    for rank, text in texts.items():
        _require(sorted(_steps(text)) == list(range(1, steps + 1)), f"rank {rank} steps")
        _require("training finished" in text, f"rank {rank} did not finish")
        _require(f["ranks"][str(rank)]["first_error"] is None, f"rank {rank} has an error")
    _require(not f["timed_out_ranks"] and not f["sigterm_ranks"], "timeouts in a healthy run")
    mean = [v["mean_loss"] for _, v in sorted(_steps(texts[0]).items())]
    first5, last5 = sum(mean[:5]) / 5, sum(mean[-5:]) / 5
    _require(last5 < 0.8 * first5, f"mean loss did not fall: {first5:.4f} -> {last5:.4f}")
    return _label("healthy", None, None, None, f, steps=steps,
                  mean_loss_first5=round(first5, 4), mean_loss_last5=round(last5, 4))


def _check_exception(run_dir: Path, p: Any) -> dict[str, Any]:
    """Rank 2 raised a ValueError at step 15; the others died in the next collective."""
    bad_rank, bad_step = plan(p, *DEFAULTS["exception"])
    f = facts(run_dir)
    culprit = f["ranks"][str(bad_rank)]
    _require((culprit["first_error"] or "").startswith(
        f"ValueError: batch at step {bad_step} "), f"culprit error: {culprit}")
    _require(culprit["exitcode"] == 1, f"culprit exit code {culprit['exitcode']}")
    _require(culprit["last_step"] == bad_step - 1, f"culprit last step {culprit}")
    error_json = sorted(run_dir.glob(f"{LOG_DIR}/*/attempt_0/{bad_rank}/error.json"))
    _require(len(error_json) == 1 and "ValueError" in _read(error_json[0]), "no error.json")
    others = [r for r in range(WORLD) if r != bad_rank]
    for rank in others:
        v = f["ranks"][str(rank)]
        _require(v["exitcode"] != 0, f"rank {rank} exited 0")
        _require(v["last_step"] is not None and v["last_step"] >= bad_step - 1,
                 f"rank {rank} stopped early: {v}")
        _require(rank in f["timed_out_ranks"] + f["connection_closed_ranks"] + f[
            "sigterm_ranks"], f"rank {rank} neither timed out nor was killed")
    return _label("crash", "exception", bad_step, bad_rank, f,
                  exception_type="ValueError", user_frame="check_batch (ddp_worker.py)")


def _check_stall(run_dir: Path, p: Any) -> dict[str, Any]:
    """Rank 1 never reached step 10's all-reduce; the others timed out in it."""
    bad_rank, bad_step = plan(p, *DEFAULTS["stall"])
    f = facts(run_dir)
    last = _last_steps(f)
    _require(last[bad_rank] == bad_step - 1, f"stalled rank last step {last}")
    _require(bad_rank not in f["timed_out_ranks"], "the stalled rank timed out itself")
    _require(f["ranks"][str(bad_rank)]["first_error"] is None, "the stalled rank raised")
    _require(f["ranks"][str(bad_rank)]["exitcode"] == -15, "the stalled rank was not killed")
    others = [r for r in range(WORLD) if r != bad_rank]
    _require(_cascade(f, others), f"timed out: {f['timed_out_ranks']}")
    _require(all(last[r] == bad_step - 1 for r in others), f"last steps {last}")
    return _label(
        "hang", "dead_rank", bad_step - 1, bad_rank, f,
        stuck_step=bad_step,
        note=f"rank {bad_rank} stopped responding before step {bad_step}'s forward "
        f"(sleeps 10x the timeout) and never reached its gradient all-reduce; the others "
        f"timed out in it after {COLLECTIVE_TIMEOUT}s and torchelastic then SIGTERMed rank "
        f"{bad_rank}: dead_rank (it never came back). first_bad_step is the last step "
        f"completed before the job stopped (docs/labels.md, hang)",
    )


def _check_mismatch_detail(run_dir: Path, p: Any) -> dict[str, Any]:
    """DETAIL: every rank raised the CollectiveFingerPrint mismatch at once (no timeout)."""
    bad_rank, bad_step = plan(p, *DEFAULTS["mismatch"])
    f = facts(run_dir)
    texts = rank_texts(run_dir)
    for rank, text in texts.items():
        _require(MISMATCH_MARK in text, f"rank {rank}: no fingerprint mismatch")
        _require(f"Rank {bad_rank} is running collective" in text
                 or f"Rank {rank} is running collective" in text, "mismatch names no rank")
    shapes = set(re.findall(rf"Rank {bad_rank} is running collective: "
                            r"CollectiveFingerPrint\([^)]*TensorShape=\[(\d+)\]", "\n".join(
                                texts.values())))
    _require(shapes == {"2"}, f"rank {bad_rank} shapes {shapes}")
    _require(not f["timed_out_ranks"], "a rank timed out: the mismatch did not fail fast")
    last = _last_steps(f)
    _require(all(s == bad_step - 1 for s in last.values()), f"last steps {last}")
    return _label(
        "crash", "collective_mismatch", bad_step, bad_rank, f,
        mismatch={"op": "ALLREDUCE", "culprit_shape": [2], "others_shape": [1]},
        note="TORCH_DISTRIBUTED_DEBUG=DETAIL: the ProcessGroupWrapper compares fingerprints "
        "before the collective, so every rank raised at once (no timeout): crash, not hang. "
        "Gradients are averaged by hand (DDP under DETAIL segfaults in torch 2.13 CPU)",
    )


def _check_mismatch_silent(run_dir: Path, p: Any) -> dict[str, Any]:
    """No DETAIL: gloo mixed the mismatched all-reduces, then every rank timed out."""
    bad_rank, bad_step = plan(p, *DEFAULTS["mismatch"])
    f = facts(run_dir)
    texts = rank_texts(run_dir)
    last = _last_steps(f)
    _require(not any(MISMATCH_MARK in t for t in texts.values()), "a fingerprint without DETAIL")
    _require(last[bad_rank] == bad_step - 1, f"culprit last step {last}")
    others = [r for r in range(WORLD) if r != bad_rank]
    _require(all(last[r] == bad_step for r in others), f"last steps {last}")
    _require(_cascade(f, list(range(WORLD))), f"timed out {f['timed_out_ranks']}")
    _require("all_reduce(stat)" in texts[bad_rank], "culprit not stuck in its all_reduce")
    _require(all("all_reduce(param.grad)" in texts[r] for r in others), "others elsewhere")
    at_step = {r: _steps(texts[r])[bad_step]["mean_loss"] for r in others}
    before = {r: _steps(texts[r])[bad_step - 1]["mean_loss"] for r in others}
    return _label(
        "hang", "collective_mismatch", bad_step - 1, bad_rank, f,
        stuck_step=bad_step,
        mean_loss_at_mismatch_step=at_step, mean_loss_step_before=before,
        note=f"no DETAIL: gloo did not detect the size mismatch; ranks {others} finished "
        f"step {bad_step}'s all_reduce(stat) with corrupted values while rank "
        f"{bad_rank} stayed in it, then the ranks timed out (rank {bad_rank} in "
        "all_reduce(stat), the others in the next step's all_reduce(param.grad); a rank "
        "whose peer exited first sees 'Connection closed by peer'): hang. first_bad_step is "
        f"the last step every rank completed ({bad_step - 1}; docs/labels.md, hang)",
    )


def _check_uneven(run_dir: Path, p: Any) -> dict[str, Any]:
    """Rank 0 ran out of batches a step early and waited in the barrier; all timed out."""
    bad_rank, _ = plan(p, *DEFAULTS["uneven"])
    f = facts(run_dir)
    steps = p.steps or UNEVEN_STEPS
    texts = rank_texts(run_dir)
    last = _last_steps(f)
    _require(last[bad_rank] == steps - 1, f"short rank last step {last}")
    _require(f"epoch 0 done after {steps - 1} steps" in texts[bad_rank], "no epoch end")
    _require("in barrier" in texts[bad_rank], "short rank not in the barrier")
    others = [r for r in range(WORLD) if r != bad_rank]
    _require(all(last[r] == steps - 1 for r in others), f"last steps {last}")
    _require(all("epoch 0 done" not in texts[r] for r in others), "a long rank ended its epoch")
    _require(_cascade(f, list(range(WORLD))), "a rank neither timed out nor lost its peer")
    return _label(
        "hang", "uneven_batches", steps - 1, bad_rank, f,
        stuck_step=steps,
        batches_per_rank={str(r): steps - 1 if r == bad_rank else steps
                          for r in range(WORLD)},
        note=f"rank {bad_rank}'s shard had {steps - 1} batches, the others' {steps}: it "
        f"ended its epoch after step {steps - 1} and waited in dist.barrier() while the "
        f"others waited in step {steps}'s gradient all-reduce; each side timed out "
        f"(a rank whose peer exited first saw 'Connection closed by peer'). first_bad_step is "
        f"the last step every rank completed (docs/labels.md, hang)",
    )




def _ranks_line(lb: dict[str, Any]) -> str:
    """``timed out: [..]; killed: [..]; torchelastic root cause: N``."""
    return (f"timed out {lb['timed_out_ranks']}, connection closed "
            f"{lb['connection_closed_ranks']}, SIGTERM {lb['sigterm_ranks']}; torchelastic's "
            f"root cause: rank {lb['torchelastic_root_cause_rank']}")


_BASE = "4 ranks, MLP under DDP; "

SPECS: tuple[Spec, ...] = (
    Spec(
        name="ddp_healthy_4ranks",
        situation="a healthy 4-rank DDP run",
        how=_BASE + f"{HEALTHY_STEPS} steps; `--tee 3`: one interleaved `train.log` with "
        "`[defaultN]:` prefixes",
        train=_train_healthy, check=_check_healthy,
        conclusion=lambda lb: (f"healthy (mean loss {lb['mean_loss_first5']} → "
                               f"{lb['mean_loss_last5']}, every rank to step {lb['steps']})"),
    ),
    Spec(
        name="ddp_rank_exception",
        situation="one rank raises an exception mid-run; the others die in the next collective",
        how=_BASE + f"rank {EXCEPTION_RANK}'s batch check raises a ValueError at step "
        f"{EXCEPTION_STEP}; `--redirects 3 --log-dir logs` (per-rank files, error.json from "
        "`@record`), torchrun's ChildFailedError block in `train.log`",
        train=_train_exception, check=_check_exception, crashes=True,
        conclusion=lambda lb: (f"crash / exception: rank {lb['culprit_rank']} raised "
                               f"{lb['exception_type']} at step {lb['first_bad_step']} in "
                               f"{lb['user_frame']}; the others are cascade ({_ranks_line(lb)})"),
    ),
    Spec(
        name="ddp_rank_stall_timeout",
        situation="one rank stalls; the others time out in the collective it never reaches",
        how=_BASE + f"rank {STALL_RANK} sleeps 10× the timeout before step {STALL_STEP}'s "
        "forward; `--tee 3`: one interleaved `train.log`",
        train=_train_stall, check=_check_stall, crashes=True,
        conclusion=lambda lb: (f"hang / dead_rank after step {lb['first_bad_step']}: rank "
                               f"{lb['culprit_rank']} never reached step {lb['stuck_step']}'s "
                               f"all-reduce and has no timeout of its own ({_ranks_line(lb)}: a "
                               "victim)"),
    ),
    Spec(
        name="ddp_collective_mismatch_detail",
        situation="one rank all-reduces a tensor of another shape, with "
        "TORCH_DISTRIBUTED_DEBUG=DETAIL",
        how=_BASE.replace("under DDP", "with gradients all-reduced by hand") + f"rank "
        f"{MISMATCH_RANK} all-reduces a [2] loss statistic at step {MISMATCH_STEP}, the "
        "others [1]; `--tee 3`",
        train=_train_mismatch_detail, check=_check_mismatch_detail, crashes=True,
        conclusion=lambda lb: (f"crash / collective_mismatch: rank {lb['culprit_rank']} ran "
                               f"ALLREDUCE TensorShape=[2] vs [1] at step "
                               f"{lb['first_bad_step']} (CollectiveFingerPrint on every rank, "
                               "no timeout)"),
    ),
    Spec(
        name="ddp_collective_mismatch_silent",
        situation="the same mismatch without DETAIL: gloo does not notice, values are "
        "corrupted and every rank times out",
        how=_BASE.replace("under DDP", "with gradients all-reduced by hand") + f"rank "
        f"{MISMATCH_RANK} all-reduces a [2] loss statistic at step {MISMATCH_STEP}, the "
        "others [1]; `--redirects 3 --log-dir logs`",
        train=_train_mismatch_silent, check=_check_mismatch_silent, crashes=True,
        conclusion=lambda lb: (f"hang / collective_mismatch after step "
                               f"{lb['first_bad_step']}: rank {lb['culprit_rank']} "
                               f"stuck in step {lb['stuck_step']}'s all_reduce(stat) while "
                               f"the others passed it (corrupted mean_loss) and wait in the next "
                               f"step's ({_ranks_line(lb)})"),
    ),
    Spec(
        name="ddp_uneven_batches",
        situation="one rank has one batch fewer: it ends its epoch a step early and the "
        "others wait",
        how=_BASE + f"rank {SHORT_RANK}'s shard has {UNEVEN_STEPS - 1} batches, the others' "
        f"{UNEVEN_STEPS}; after its loop it waits in `dist.barrier()`; `--redirects 3 "
        "--log-dir logs`",
        train=_train_uneven, check=_check_uneven, crashes=True,
        conclusion=lambda lb: (f"hang / uneven_batches after step {lb['first_bad_step']}: "
                               f"rank {lb['culprit_rank']} ended its epoch and waited in the "
                               f"barrier, the others in step {lb['stuck_step']}'s all-reduce "
                               f"({_ranks_line(lb)})"),
    ),
)
