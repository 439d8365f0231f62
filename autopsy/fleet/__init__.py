"""Fleet triage: diagnose every run under some roots and answer for the fleet.

``autopsy fleet ROOT...`` finds the runs (:mod:`.discover`), diagnoses each as a pure
function of its files (:mod:`.task`) on a local process pool or a Dask cluster
(:mod:`.execute`), caches each run's report keyed by its files' paths, sizes and mtimes
(:mod:`.cache`), and writes one row per run (:mod:`.table`). Over the rows it clusters
failures by signature (:mod:`.signatures`), names hosts that fail more than chance
(:mod:`.hosts`) and sums the GPU time each signature cost (:mod:`.summary`). ``autopsy
fleet diff GOOD BAD`` compares two runs (:mod:`.diff`). See docs/fleet.md.
"""
