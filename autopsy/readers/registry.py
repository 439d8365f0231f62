"""The format registry: every input format autopsy reads, and the module that reads it.

Each reader module declares ``NAME``, ``FORMATS`` (a tuple of :class:`Format`), a cheap
``sniff(path)`` (file name and first bytes) and ``read(path, rel)`` (or ``read_group``).
Discovery asks the modules of :data:`READER_MODULES` in order; the first whose ``sniff``
recognises a file reads it. ``autopsy formats`` lists :func:`formats`. Adding a format is
one module (or one :class:`Format` entry in the module that parses it) plus its fixtures.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType

#: Reader modules, in the order they are asked to sniff a file. The first that
#: recognises a file gets it; config from earlier readers wins over later ones.
#: Table readers come before the text-log reader: a Keras ``training.log`` is a CSV.
READER_MODULES: tuple[str, ...] = (
    "autopsy.readers.training_args",
    "autopsy.readers.trainer_state",
    "autopsy.readers.hf_config",
    "autopsy.readers.tensorboard",
    "autopsy.readers.wandb_run",
    "autopsy.readers.mlflow_store",
    "autopsy.readers.flight_recorder",
    "autopsy.readers.capture_bundle",
    "autopsy.readers.lightning_csv",
    "autopsy.readers.ultralytics_csv",
    "autopsy.readers.epoch_csv",
    "autopsy.readers.jsonl_metrics",
    "autopsy.readers.history_json",
    "autopsy.readers.chainer_log",
    "autopsy.readers.log_history",
    "autopsy.readers.ranklogs",
)


@dataclass(frozen=True)
class Format:
    """One input format: what it is, what autopsy takes from it, an example name."""

    slug: str
    title: str
    reads: tuple[str, ...]
    example: str

    def as_dict(self, reader: str) -> dict[str, object]:
        """The format as a JSON-able dict (``autopsy formats --format json``)."""
        return {"slug": self.slug, "title": self.title, "reads": list(self.reads),
                "example": self.example, "reader": reader}


def reader_modules() -> list[ModuleType]:
    """Import and return the reader modules, in sniffing order."""
    return [importlib.import_module(name) for name in READER_MODULES]


def formats() -> list[tuple[str, Format]]:
    """Every registered format with the ``NAME`` of the reader that reads it."""
    out: list[tuple[str, Format]] = []
    for module in reader_modules():
        for fmt in getattr(module, "FORMATS", ()):
            out.append((module.NAME, fmt))
    return out


def supported_slugs() -> frozenset[str]:
    """The slugs of every registered format."""
    return frozenset(f.slug for _, f in formats())
