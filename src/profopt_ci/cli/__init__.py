"""cli: the `profopt` command. argv in, an exit code out (0 ok · 1 policy · 2 usage/spec · 3 infra).

main assembles the parser and is the one error boundary; one module per verb (validate, run,
compare, diff, demo, report, publish, baseline, merge) registers its flags and calls the stages
with plain values; options and outputs hold what the verbs share.
"""
