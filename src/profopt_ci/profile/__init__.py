"""profile: one profiled run per side in; the profile summary of docs/data-model.md out.

sides runs it after the timed rounds (never mixed into them) and feeds the bottleneck rules;
capture takes the torch or cProfile run; kineto (with kineto_events, kineto_phases, kineto_memory,
kineto_device) summarizes a torch trace; callgrind_out reads valgrind's dumps; opcats names ops'
categories, FLOPs and bytes; machine measures the runner's roofline.
"""
