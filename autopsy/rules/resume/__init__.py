"""Resume rules: the audit of the run's checkpoints (``run.checkpoints``) as findings.

RES001..RES004 judge the checkpoints as they are on disk (see ``autopsy ckpt``);
codes from RES010 on are kept for resume forensics (what a past resume lost).
"""
