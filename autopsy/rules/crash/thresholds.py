"""The crash family's thresholds: one place, each with why it has its value.

A crash's family and cause come from the exception catalogue
(:mod:`autopsy.rules.exceptions`), not from thresholds; what is tunable here is how sure a
finding is. Confidence orders findings of equal severity, cause and family
(``docs/verdicts.md``, ranking step 5) and is the verdict's ``confidence`` in the JSON
report.
"""

from __future__ import annotations

from autopsy.rules.registry import Threshold

#: CRASH001 rank-exception.
CRASH001: dict[str, Threshold] = {
    "confidence": Threshold(0.9, (
        "The confidence when one rank raised an exception of its own: its traceback names the "
        "exception, its message and the frame, the most direct evidence a log holds. Not 1: "
        "the traceback read may be a symptom whose cause was never logged. Raised by 0.05 "
        "when torchelastic's root cause names the same rank.")),
    "confidence_disputed": Threshold(0.8, (
        "The confidence when several ranks raised exceptions of their own: which one is the "
        "root then rests on their order (wall time, else step, else torchelastic's report), "
        "which clock skew or sparse logging can get wrong, hence lower than confidence.")),
}

#: CRASH002 process-died.
CRASH002: dict[str, Threshold] = {
    "confidence": Threshold(0.75, (
        "The confidence when only the way a process died is logged (a segfault, a CUDA or "
        "NCCL failure, a kill from the scheduler) with no exception of the training code: "
        "the line names how it died, not why, and a communication error can be the echo of a "
        "death elsewhere; lower than CRASH001's 0.9 for a rank's own exception.")),
    "confidence_exit": Threshold(0.6, (
        "The confidence when the launcher's exit code is all there is (failed (exitcode: 1) "
        "local_rank: 5): which rank failed is certain, what failed is not in the logs, and a "
        "rank can exit first because of a peer's failure elsewhere; below the 0.75 of a "
        "logged way of dying.")),
}
