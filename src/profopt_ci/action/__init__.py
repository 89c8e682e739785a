"""The GitHub Action, by job. In: action.yml's inputs and the job's environment. Out: the exit code,
`.profopt/`, the PR comment, summary and step outputs.

inputs (settings) → workspace (refs, .profopt, ownership) → image (build/reuse) → runs | local
(measure) → host (report cause, publish, push); outcome (the types they share); main (entry point).
"""
