"""spec: profopt.yml in, the resolved run plan out.

load (find, read, check, resolve) → model (`Spec`, `Benchmark`, `Settings`, the value parsers);
yamlnodes and checks are its YAML and schema/semantic layers, guard the hostile-input limits,
plan the spec + command-line overrides + each side's own spec
resolved once (`Plan`), which every later stage reads.
"""
