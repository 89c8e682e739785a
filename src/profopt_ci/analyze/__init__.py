"""analyze: samples in, verdicts out — rank statistics (ranks), verdicts (stats), many benchmarks
(multiplicity), sequential looks (looks), decisions (decide), the bottleneck (rules, bottleneck),
change points in the nightly history (changepoints), counted instructions (instructions).

See docs/layout.md for the whole tree.
"""
