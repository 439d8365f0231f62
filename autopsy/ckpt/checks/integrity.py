"""Integrity and safety: unreadable or damaged files (CKPT020), absent shards (CKPT021),
torn saves (CKPT007), dangerous pickles (CKPT030), pickles naming globals that cannot be
vouched for (CKPT032)."""

from __future__ import annotations

from autopsy.ckpt.checks.judge import Judge
from autopsy.ckpt.components import Part, Status
from autopsy.model.finding import Evidence, Severity

#: Globals torch itself writes that the danger list's module rule would flag, though
#: ``torch.load(weights_only=True)`` accepts them (DCP's ``.metadata`` names the first).
BENIGN_GLOBALS: frozenset[str] = frozenset({"torch.serialization._get_layout"})

_TORN_WORDS = ("zero-length", "empty file", "truncated", "shorter", "torn", "partly written",
               "salvaged", "cut short", "end of the file", "ends before", "past the end")


def check(judge: Judge) -> None:
    """Run the integrity and safety checks over every file read."""
    parts = judge.parts
    owner = parts.file_part()
    for loaded in parts.all_files():
        part = owner.get(loaded.path, Part.WEIGHTS)
        unsafe = [(g, why) for g, why in loaded.unsafe if g not in BENIGN_GLOBALS]
        if unsafe:
            names = ", ".join(g for g, _ in unsafe)
            judge.mark(part, Status.UNSAFE, f"{loaded.rel} references {names}")
            judge.fail(
                "CKPT030",
                f"{loaded.rel} references {names}: loading it with torch.load("
                "weights_only=False) would run it. autopsy never executed it.",
                severity=Severity.CRITICAL, confidence=1.0,
                evidence=[Evidence(f"{loaded.rel}: {g} ({why})", source=loaded.rel, key=g)
                          for g, why in unsafe],
                advice=["do not resume from this checkpoint; find out who wrote that file",
                        "load only with torch.load(weights_only=True), which refuses it"])
        unverified = [(g, why) for g, why in loaded.unverified if g not in BENIGN_GLOBALS]
        if unverified:
            names = ", ".join(g for g, _ in unverified)
            if not unsafe:
                judge.mark(part, Status.UNSAFE, f"{loaded.rel} references {names}")
            judge.fail(
                "CKPT032",
                f"{loaded.rel} references {names}, which autopsy cannot vouch for: "
                "torch.load(weights_only=False) would run whatever it is, and torch.load("
                "weights_only=True) refuses it. autopsy never executed it.",
                severity=Severity.ERROR, confidence=0.7,
                evidence=[Evidence(f"{loaded.rel}: {g} ({why})", source=loaded.rel, key=g)
                          for g, why in unverified],
                advice=["resume from it only if you know what that name is and trust where "
                        "the file came from",
                        "otherwise resume from an older checkpoint, or load the weights alone "
                        "with torch.load(weights_only=True)"])
        if loaded.error is not None:
            torn = any(w in loaded.error.lower() for w in _TORN_WORDS)
            judge.mark(part, Status.CORRUPT, f"{loaded.rel}: {loaded.error}")
            judge.fail("CKPT007" if torn else "CKPT020", f"{loaded.rel} cannot be read: "
                       f"{loaded.error}",
                       evidence=[Evidence(f"{loaded.rel}: {loaded.error}", source=loaded.rel)],
                       advice=["resume from an older checkpoint; this file is damaged"])
            continue
        for problem in loaded.problems:
            torn = any(w in problem.lower() for w in _TORN_WORDS)
            judge.mark(part, Status.CORRUPT, f"{loaded.rel}: {problem}")
            judge.fail("CKPT007" if torn else "CKPT020", f"{loaded.rel}: {problem}",
                       evidence=[Evidence(f"{loaded.rel}: {problem}", source=loaded.rel)],
                       advice=["resume from an older checkpoint; this file is damaged"])
    for part, rel, what in parts.missing_files:
        judge.mark(part, Status.CORRUPT, what)
        judge.fail("CKPT021", what, evidence=[Evidence(what, source=rel)],
                   advice=["copy the missing file back, or resume from an older checkpoint"])
    for what in parts.torn:
        judge.mark(Part.TRAINER_STATE, Status.MISSING, what)
        judge.fail("CKPT007", f"{parts.root.name}: {what}",
                   evidence=[Evidence(what, source="trainer_state.json")],
                   advice=["resume from the newest complete checkpoint"])
