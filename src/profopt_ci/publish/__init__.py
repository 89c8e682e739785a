"""Publishing a report to GitHub. In: a report.md (and comparison@1), the job's environment (token,
event, GITHUB_OUTPUT, GITHUB_STEP_SUMMARY). Out: one sticky PR comment, the job summary, step
outputs, annotations, or the fork-PR artifact.

event (the triggering event) · comment (the `publish` flow) · rest (the REST client) · outputs
(summary, outputs, annotations) · artifact (the fork hand-off and its hostile-input reader).
"""
