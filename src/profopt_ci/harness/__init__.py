"""What runs inside the measured process: the timing of a step (timing: values, phases, recorded
quality values — the `profopt_ci.phase` / `record` a user's step calls), the step's own threads
(threads), and the in-process runners of suites written for another tool (suite_run and its
pytest / asv / pyperf adapters), which build a collected benchmark's step inside that tool's own
runner. Standard library only (plus what the step imports): the worker measures the user's code,
not ours. Nothing here imports a stage above it.
"""
