"""PyTorch Lightning ``CSVLogger``: ``metrics.csv`` (and ``hparams.yaml``) of every version.

``metrics.csv`` has an ``epoch`` and a ``step`` column and one column per logged key;
rows are sparse (a training row has ``train_loss_step`` and an empty ``val_loss``, a
validation row the reverse). Every non-empty numeric cell is a point at the row's
``step`` (``raw_tag`` the column name; ``train_loss_step`` and ``train_loss`` mean
``loss``, ``val_loss`` means ``eval_loss``, ``train_loss_epoch`` stays apart since it is
an epoch mean), the ``epoch`` column included.

Each ``version_N`` folder is one launch of the script: read together, versions are
segments in the order of N (``version_0`` is segment 0), so a run resumed into a new
version keeps its pre-crash tail as its own segment. ``hparams.yaml`` becomes config
(top-level scalars, and one nesting level as ``parent.key``), with the usual names also
given their canonical key (``lr`` -> ``learning_rate``, ``gradient_clip_val`` ->
``max_grad_norm``, ``precision: 16`` -> ``fp16``, ...).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from autopsy.model.config import ConfigValue
from autopsy.model.problem import Problem
from autopsy.model.scalars import concat_scalars
from autopsy.readers.base import RunPart, head
from autopsy.readers.csvtable import Table, header_of, rows, step_of
from autopsy.readers.registry import Format

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

NAME = "lightning_csv"
FORMATS = (
    Format("lightning_csv", "PyTorch Lightning CSVLogger metrics and hyper-parameters",
           ("scalars", "config"), "lightning_logs/version_0/metrics.csv, hparams.yaml"),
)
#: How much of the head a sniff reads to find the header line.
SNIFF_HEAD = 4096
#: ``hparams.yaml`` files larger than this are not read (they are a few KB).
MAX_HPARAMS_BYTES = 4 << 20
_VERSION = re.compile(r"(?:^|/)version_(\d+)(?:/|$)")
#: hparams.yaml key -> canonical config key.
HPARAM_KEYS: dict[str, str] = {
    "lr": "learning_rate", "learning_rate": "learning_rate",
    "weight_decay": "weight_decay", "seed": "seed", "warmup_steps": "warmup_steps",
    "max_epochs": "num_train_epochs", "max_steps": "max_steps",
    "gradient_clip_val": "max_grad_norm", "accumulate_grad_batches":
    "gradient_accumulation_steps", "batch_size": "per_device_train_batch_size",
    "optimizer": "optim",
}


def sniff(path: Path) -> bool:
    """``metrics.csv`` with ``epoch``/``step`` columns, or ``hparams.yaml`` beside one."""
    if path.name == "hparams.yaml":
        return (path.parent / "metrics.csv").is_file()
    if path.name != "metrics.csv":
        return False
    cells = header_of(head(path, SNIFF_HEAD))
    return bool(cells) and "step" in cells


def read(path: Path, rel: str) -> RunPart:
    """Read one file (see :func:`read_group`)."""
    return read_group([path], [rel])


def version_of(rel: str) -> int:
    """The N of the ``version_N`` folder holding ``rel`` (0 when none)."""
    found = _VERSION.findall(rel)
    return int(found[-1]) if found else 0


def read_group(paths: list[Path], rels: list[str]) -> RunPart:
    """Read every ``metrics.csv`` and ``hparams.yaml``; versions become segments."""
    versions = sorted({version_of(r) for p, r in zip(paths, rels, strict=True)
                       if p.name == "metrics.csv"})
    segment_of = {v: i for i, v in enumerate(versions)}
    frames: list[pd.DataFrame] = []
    problems: list[Problem] = []
    config: list[ConfigValue] = []
    # the newest version's hyper-parameters first: the first value of a key wins
    for path, rel in sorted(zip(paths, rels, strict=True), key=lambda pr: -version_of(pr[1])):
        if path.name == "hparams.yaml":
            config.extend(read_hparams(path, rel, problems))
            continue
        table = read_metrics(path, rel)
        frames.append(table.frame(segment=segment_of.get(version_of(rel), 0)))
        problems.extend(table.problems)
    scalars = concat_scalars(frames) if frames else None
    return RunPart(scalars=scalars, config=config, problems=problems)


def read_metrics(path: Path, rel: str) -> Table:
    """One ``metrics.csv`` as points at its ``step`` column."""
    table = Table(rel)
    it = rows(path, table)
    header = next(it, None)
    if header is None:
        table.problems.append(Problem(rel, "empty file", kind="empty"))
        return table
    header = [h.strip() for h in header]
    if "step" not in header:
        table.problems.append(Problem(rel, "no step column", kind="bad_header"))
        return table
    s = header.index("step")
    cols = [(i, name) for i, name in enumerate(header) if i != s and name]
    for row in it:
        if len(row) <= s:
            table.bad_rows += 1
            continue
        step = step_of(row[s])
        if step is None:
            table.bad_rows += 1
            continue
        table.add_cells(step, row, cols)
    table.close()
    return table


def yaml_scalar(text: str) -> object:
    """A YAML scalar as Python: numbers, booleans, null, quoted or plain strings."""
    t = text.strip()
    if " #" in t:
        t = t.split(" #", 1)[0].rstrip()
    if len(t) >= 2 and t[0] == t[-1] and t[0] in "'\"":
        return t[1:-1]
    low = t.lower()
    if low in ("true", "yes", "on"):
        return True
    if low in ("false", "no", "off"):
        return False
    if low in ("null", "~", ""):
        return None
    try:
        return int(t)
    except ValueError:
        pass
    try:
        return float(t)
    except ValueError:
        return t


def read_hparams(path: Path, rel: str, problems: list[Problem]) -> list[ConfigValue]:
    """Top-level (and one nested level) scalars of a Lightning ``hparams.yaml``.

    A plain line reader, not a YAML engine: tags (``!!python/object``), anchors and
    block lists are skipped; nothing in the file is ever constructed or executed.
    """
    try:
        if path.stat().st_size > MAX_HPARAMS_BYTES:
            problems.append(Problem(rel, "hparams.yaml larger than 4 MiB; not read",
                                    kind="too_large"))
            return []
        text = path.read_bytes().decode("utf-8", errors="replace")
    except OSError as exc:
        problems.append(Problem(rel, f"cannot read: {exc.strerror}", kind="unreadable"))
        return []
    out: list[ConfigValue] = []
    parent: str | None = None
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith(("#", "-")):
            continue
        indent = len(line) - len(line.lstrip(" "))
        key, sep, value = line.strip().partition(":")
        if not sep or " " in key.strip() or "!!" in value or "&" in value or "*" in value[:2]:
            continue
        key = key.strip().strip("'\"")
        if indent == 0:
            parent = None
            if not value.strip():
                parent = key
                continue
            name = key
        elif parent is not None and indent <= 4 and value.strip():
            name = f"{parent}.{key}"
        else:
            continue
        v = yaml_scalar(value)
        out.append(ConfigValue(name, v, rel))
        canon = HPARAM_KEYS.get(key)
        if canon and canon != name:
            out.append(ConfigValue(canon, v, rel))
        if key == "precision" and str(v).startswith("16"):
            out.append(ConfigValue("fp16", True, rel))
        elif key == "precision" and str(v).startswith("bf16"):
            out.append(ConfigValue("bf16", True, rel))
    return out
