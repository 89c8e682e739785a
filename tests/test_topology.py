"""The CPU set a step's threads get, chosen from the machine's topology: fake sysfs trees of a 2-CPU VM,
an 8-CPU machine with SMT and a 64-CPU machine on two NUMA nodes with a GPU."""
from __future__ import annotations

from pathlib import Path

import pytest

from profopt_ci.measure import topology
from profopt_ci.measure.cpus import Placement, format_cpuset


def sysfs(root: Path, cpus: dict[int, tuple[int, int]], nodes: dict[int, str], gpus: dict[str, int] | None = None) -> Path:
    """cpuN/topology/{physical_package_id,core_id}, nodeN/cpulist and PCI display devices under `root`."""
    for cpu, (pkg, core) in cpus.items():
        d = root / "devices" / "system" / "cpu" / f"cpu{cpu}" / "topology"
        d.mkdir(parents=True)
        (d / "physical_package_id").write_text(f"{pkg}\n")
        (d / "core_id").write_text(f"{core}\n")
    for node, cpulist in nodes.items():
        d = root / "devices" / "system" / "node" / f"node{node}"
        d.mkdir(parents=True)
        (d / "cpulist").write_text(cpulist + "\n")
    for addr, node in (gpus or {}).items():
        d = root / "bus" / "pci" / "devices" / addr
        d.mkdir(parents=True)
        (d / "vendor").write_text("0x10de\n")
        (d / "class").write_text("0x030200\n")
        (d / "numa_node").write_text(f"{node}\n")
    return root


@pytest.fixture
def vm2(tmp_path):
    return topology.Topology.read(sysfs(tmp_path, {0: (0, 0), 1: (0, 1)}, {0: "0-1"}))


@pytest.fixture
def smt8(tmp_path):
    """4 cores, 2 threads each: CPU i and i+4 are siblings."""
    return topology.Topology.read(sysfs(tmp_path, {c: (0, c % 4) for c in range(8)}, {0: "0-7"}))


@pytest.fixture
def numa64(tmp_path):
    """2 sockets × 16 cores × 2 threads; node 0: 0-15,32-47, node 1: 16-31,48-63; a GPU on node 0."""
    cpus = {c: (c // 16 % 2, c % 16) for c in range(64)}
    root = sysfs(tmp_path, cpus, {0: "0-15,32-47", 1: "16-31,48-63"}, {"0000:00:01.0": 1, "0000:3b:00.0": 0})
    # the first display controller in PCI order is the GPU profopt takes the node of; make it node 0's
    (root / "bus" / "pci" / "devices" / "0000:00:01.0" / "class").write_text("0x020000\n")  # a NIC
    return topology.Topology.read(root), root


def cores(topo: topology.Topology, cpus: list[int]) -> set:
    return {topo.core_of(c) for c in cpus}


def test_two_cpus_a_two_thread_step_takes_both_and_says_it_shares_the_parents(vm2):
    cpus, why = topology.pick(vm2, [0, 1], 2, avoid=0)
    assert cpus == [0, 1] and why["cores"] == 2 and why["with_parent"] and not why["smt_shared"]
    assert topology.pick(vm2, [0, 1], 1, avoid=0)[0] == [1]  # away from the parent's CPU


def test_smt_two_threads_get_two_distinct_cores_away_from_the_parents_core(smt8):
    cpus, why = topology.pick(smt8, list(range(8)), 2, avoid=0)
    assert len(cores(smt8, cpus)) == 2 and smt8.core_of(0) not in cores(smt8, cpus)
    assert cpus == [2, 3] and why["cores"] == 2 and not why["smt_shared"] and not why["with_parent"]
    # four threads: four cores, the parent's core by its other thread (CPU 4), never the parent's CPU
    cpus, why = topology.pick(smt8, list(range(8)), 4, avoid=0)
    assert cpus == [1, 2, 3, 4] and why["cores"] == 4 and not why["smt_shared"] and 0 not in cpus
    # more threads than cores: siblings, and it says so
    cpus, why = topology.pick(smt8, list(range(8)), 6, avoid=0)
    assert len(cpus) == 6 and why["cores"] == 4 and why["smt_shared"] and 0 not in cpus


def test_smt_never_two_hyperthreads_of_one_core_while_a_free_core_exists(smt8):
    for n in (1, 2, 3):
        for avoid in (None, 0, 5):
            cpus, why = topology.pick(smt8, list(range(8)), n, avoid=avoid)
            assert len(cores(smt8, cpus)) == n, (n, avoid, cpus)
            assert avoid not in cpus


def test_the_allowed_set_bounds_the_choice(smt8):
    cpus, why = topology.pick(smt8, [4, 5, 6, 7], 2, avoid=4)
    assert cpus == [6, 7] and why["pool"] == 4
    cpus, why = topology.pick(smt8, [2, 6], 2, avoid=None)  # one core's two threads: all there is
    assert cpus == [2, 6] and why["smt_shared"] and why["cores"] == 1


def test_numa_the_cores_come_from_one_node_and_the_gpus_first(numa64):
    topo, root = numa64
    pool = list(range(64))
    cpus, why = topology.pick(topo, pool, 8, avoid=0)
    assert {topo.node_of(c) for c in cpus} == {1} and len(cores(topo, cpus)) == 8 and why["node"] == 1
    assert why["node_why"] == "fits"
    gpu = topology.gpu_node(root)
    assert gpu == 0
    cpus, why = topology.pick(topo, pool, 8, avoid=0, gpu=gpu)
    assert {topo.node_of(c) for c in cpus} == {0} and why["node_why"] == "gpu" and 0 not in cpus
    assert len(cores(topo, cpus)) == 8 and topo.core_of(0) not in cores(topo, cpus)


def test_numa_more_threads_than_a_node_has_cores_spans_nodes_on_distinct_cores(numa64):
    topo, _ = numa64
    cpus, why = topology.pick(topo, list(range(64)), 20, avoid=0)
    assert len(cpus) == 20 and len(cores(topo, cpus)) == 20 and why["node"] is None
    assert {topo.node_of(c) for c in cpus} == {0, 1} and not why["smt_shared"]
    cpus, why = topology.pick(topo, list(range(64)), 33, avoid=0)  # 32 cores: siblings, said
    assert len(cpus) == 33 and why["smt_shared"] and 0 not in cpus


def test_a_tree_without_topology_files_is_one_core_per_cpu(tmp_path):
    (tmp_path / "devices" / "system" / "cpu").mkdir(parents=True)
    topo = topology.Topology.read(tmp_path)
    assert topology.pick(topo, [0, 1, 2, 3], 2, avoid=0)[0] == [2, 3]
    assert topology.gpu_node(tmp_path) is None


def test_the_placement_settles_by_topology_and_records_why(smt8):
    p = Placement(pool=list(range(8)), topology=smt8)
    assert p.settle({"base": {"need": 2, "busy": 2}, "head": {"need": 1}}, "b") == [2, 3]
    rec = p.record()
    assert rec["cpuset"] == format_cpuset([2, 3]) and rec["why"]["cores"] == 2 and rec["why"]["pool"] == 8
    # the passes' second set (profile/side_pass.pass_sets): two more cores, none shared with the set
    second = p.beside(2)
    assert second == [0, 1] and not cores(smt8, second) & cores(smt8, [2, 3])
    assert p.beside(3) is None  # only two cores left: the passes run one after the other
    from profopt_ci.measure.side_pass import pass_sets

    assert pass_sets(p, 2) == [[2, 3], [0, 1]] and pass_sets(p, 1) == [[2, 3]]
    wide = Placement(pool=list(range(8)), topology=smt8)
    wide.settle({"base": {"need": 3}, "head": {"need": 3}})
    assert pass_sets(wide, 2) == [wide.cpus] and pass_sets(None, 2) == [None]


QUALITY_STEP = """\
import profopt_ci

def make_step(lr=0.1):
    state = {"loss": 1.0}
    def step():
        sum(i * i for i in range(2000))
        state["loss"] *= 1 - lr
        profopt_ci.record(loss=state["loss"])
    return step
"""


@pytest.mark.parametrize("size", [1, 2])
def test_both_sides_passes_come_back_whether_run_at_once_or_one_after_the_other(tmp_path, vm2, size):
    """Each side's quality pass and profile, on disjoint sets at once (a 1-CPU step on two cores) or
    one after the other on the measured set (a 2-CPU step): both sides' results, never one twice."""
    import random

    from profopt_ci.measure.processes import Side
    from profopt_ci.measure.rounds import RoundContext, RoundState
    from profopt_ci.measure.side_pass import pass_sets, profile_all
    from profopt_ci.specfile.load import parse_spec
    from profopt_ci.specfile.plan import make_plan, overrides

    (tmp_path / "q.py").write_text(QUALITY_STEP)
    spec = parse_spec("version: 1\nbenchmarks:\n  - {name: q, callable: 'q:make_step', quality_steps: 5,"
                      " constraints: [{metric: loss, rel_tol: 0.01}]}\n", str(tmp_path / "profopt.yml"))
    plan = make_plan(spec, overrides())
    sides = [Side("base", tmp_path), Side("head", tmp_path)]
    for side in sides:
        plan = plan.attach(side.name, None)
    placement = Placement(pool=[0, 1], topology=vm2)
    placement.settle({"base": {"need": size}, "head": {"need": size}})
    assert len(pass_sets(placement, 2)) == (2 if size == 1 else 1)
    ctx = RoundContext(plan, sides, RoundState(placements={"q": placement}), tmp_path, random.Random(0), lambda line: None)
    profiles, traces = profile_all(ctx, spec.benchmarks, lambda b, s: True, None)
    assert set(profiles["q"]) == {"base", "head"} and set(traces["q"]) == {"base", "head"}
    assert all(p["kind"] == "cprofile" for p in profiles["q"].values())
    assert traces["q"]["base"]["values"]["loss"] == traces["q"]["head"]["values"]["loss"]


def test_the_report_says_one_cpu_and_several_each_in_its_own_words():
    from profopt_ci.words import i18n

    why = {"cores": 1, "smt_shared": False, "node": None, "node_why": None, "parent_cpu": 0, "with_parent": False,
           "pool": 2, "pool_cores": 2}
    one = i18n.message("note.cpu_why", cpus="1", names=["step"], why=why)["text"]
    two = i18n.message("note.cpus_why", cpus="0-1", names=["step"], why={**why, "cores": 2, "with_parent": True})["text"]
    assert one.startswith("CPU 1 (step): a core of its own; away from CPU 0") and "core(s)" not in one
    assert two.startswith("CPUs 0-1 (step): 2 distinct cores; with CPU 0")
