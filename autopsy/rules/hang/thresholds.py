"""The hang rules' thresholds: one place, each with why it has its value.

Whether a run hung, and on which rank, comes from the log events (timeouts, SeqNums,
barriers, interrupted waits); what is tunable here is how sure each finding is. Confidence
orders findings of equal severity, cause and family (``docs/verdicts.md``, ranking step 5)
and is the verdict's ``confidence`` in the JSON report. (HANG005 is of family ``crash``: the
ranks raised rather than hung.)
"""

from __future__ import annotations

from autopsy.rules.registry import Threshold

#: HANG001 collective-timeout-laggard.
HANG001: dict[str, Threshold] = {
    "confidence_named": Threshold(0.85, (
        "The confidence when the logs name the laggard the others waited for (a desync "
        "report, the one rank with no timeout, the rank furthest behind in SeqNum, the rank "
        "whose log stops first): the timeout is explained by a rank.")),
    "confidence_unnamed": Threshold(0.5, (
        "The confidence when ranks timed out but no laggard shows in the logs: the finding "
        "reports the timeout itself (nccl_timeout), and whether a rank died, straggled or "
        "deadlocked is open, an even chance.")),
}

#: HANG002 uneven-batches.
HANG002: dict[str, Threshold] = {
    "confidence": Threshold(0.8, (
        "The confidence of uneven batches: a minority timed out in a barrier after its loop "
        "while the majority timed out in the next all-reduce, the pattern of a rank that ran "
        "out of data first. Inferred from where each rank waited, not said by the logs, "
        "hence below the 0.85 of a named laggard (HANG001) or an init timeout (HANG004).")),
}

#: HANG003 collective-mismatch.
HANG003: dict[str, Threshold] = {
    "confidence_numel": Threshold(0.85, (
        "The confidence when, at the same SeqNum, one rank entered the collective with a "
        "different number of elements (NumelIn) than the others: the mismatch is in the "
        "timeout messages themselves.")),
    "confidence_place": Threshold(0.7, (
        "The confidence when the mismatch is inferred from where the odd rank waited (stuck "
        "at an earlier call site while the others got past it): other causes can leave a "
        "rank there, hence below confidence_numel.")),
}

#: HANG004 init-hang.
HANG004: dict[str, Threshold] = {
    "confidence": Threshold(0.85, (
        "The confidence of an init or barrier hang: the rendezvous, store or barrier timeout "
        "says itself how many ranks joined or which failed to, so only why they did not "
        "join is left open.")),
}

#: HANG005 collective-mismatch-detected.
HANG005: dict[str, Threshold] = {
    "confidence": Threshold(0.9, (
        "The confidence of a detected mismatch: the framework compared the collectives "
        "itself (TORCH_DISTRIBUTED_DEBUG=DETAIL fingerprints, gloo's size check) and raised, "
        "the most direct evidence of a mismatch, above HANG003's inferences.")),
}

#: HANG006 interrupted-stall.
HANG006: dict[str, Threshold] = {
    "confidence": Threshold(0.7, (
        "The confidence that an interrupted run (KeyboardInterrupt, SIGTERM) was stuck: its "
        "innermost frame is a wait, but a run stopped on purpose while it briefly waited "
        "looks the same, so it stays below the hang findings read from timeouts.")),
}

#: HANG007 stack-odd-one-out.
HANG007: dict[str, Threshold] = {
    "confidence": Threshold(0.75, (
        "The confidence that the rank whose stack differs from the majority's is the one the "
        "others wait for: the dumps show it directly, but a dump taken while the job still "
        "ran (not hung) catches ranks at different points of a normal step, so it stays "
        "below the findings read from collective timeouts (0.85-0.9).")),
    "min_ranks": Threshold(3, (
        "Stacks of at least 3 ranks are needed: with 2, neither is the odd one out.")),
}
