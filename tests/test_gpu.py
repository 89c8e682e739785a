"""GPU steps without a GPU: a stand-in NVML (tests/fake_nvml.c, a shared library the real pynvml
loads as libnvidia-ml.so.1) and a stand-in CUDA allocator (a `torch` package whose `cuda` the
worker's own device path, harness.cuda_device.CudaDevice, reads), so the code path a real device takes
runs: the parent's reads between values, the energy blocks, throttled rounds left out of the
verdict, the notes with their remedy. torch.compile runs for real on CPU."""
from __future__ import annotations

import ctypes
import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from conftest import make_repo, run_cli

from profopt_ci.measure import gpu

HERE = Path(__file__).resolve().parent
pynvml = pytest.importorskip("pynvml")  # the `test` extra installs nvidia-ml-py


@pytest.fixture(scope="module")
def nvml_dir(tmp_path_factory) -> Path:
    """The stand-in NVML built as libnvidia-ml.so.1 in a directory of its own."""
    if shutil.which("gcc") is None:
        pytest.skip("gcc is needed to build the stand-in NVML")
    out = tmp_path_factory.mktemp("nvml")
    subprocess.run(["gcc", "-shared", "-fPIC", "-O1", "-o", str(out / "libnvidia-ml.so.1"), str(HERE / "fake_nvml.c")],
                   check=True, capture_output=True, text=True)
    return out


@pytest.fixture
def nvml_here(nvml_dir, tmp_path, monkeypatch):
    """The stand-in loaded by the real pynvml in this process (LD_LIBRARY_PATH is read only when a
    process starts: the CLI tests set it; here the binding is handed the library it would load)."""
    state = tmp_path / "nvml-state"
    state.write_text("")
    monkeypatch.setenv("FAKE_NVML_STATE", str(state))
    monkeypatch.setattr(pynvml, "nvmlLib", ctypes.CDLL(str(nvml_dir / "libnvidia-ml.so.1")))
    monkeypatch.setattr(pynvml, "_nvmlGetFunctionPointer_cache", {})
    monkeypatch.setattr(gpu, "_binding", {"state": None, "error": None})
    return state


def test_reads_clocks_power_throttling_and_energy_through_pynvml(nvml_here):
    nvml_here.write_text(f"sm 1755\nmem 1593\npower_mw 312500\ntemp 71\nreasons {0x4 | 0x40}\n"
                         f"energy_dir {nvml_here.parent}\nuuid GPU-abc\n")
    (nvml_here.parent / "e-1").write_text("1500")
    (nvml_here.parent / "e-2").write_text("250")
    dev = gpu.open_device({"index": 0, "uuid": "abc"}, {})  # torch's UUID has no GPU- prefix
    assert dev is not None and dev.uuid == "GPU-abc"
    r = dev.read()
    assert (r["sm_mhz"], r["mem_mhz"], r["power_mw"], r["temperature_c"], r["energy_mj"]) == (1755, 1593, 312500, 71, 1750)
    assert gpu.throttle_names(r["reasons"]) == ["power_cap", "hw_thermal"]
    reads = gpu.RoundReads(dev, ["base", "head"])
    reads.take("base")
    nvml_here.write_text(f"sm 1410\nmem 1593\npower_mw 200000\ntemp 65\nreasons 0\nenergy_dir {nvml_here.parent}\n")
    reads.take("base")
    block = reads.block("base", {"energy_mj": 40, "energy_steps": 20, "energy_ms": 100.0}, reads.throttled())
    assert block["sm_mhz_min"] == 1410 and block["sm_mhz_max"] == 1755
    assert block["power_w"] == 256.25 and block["temperature_c"] == 71
    assert block["throttle"] == ["power_cap", "hw_thermal"] and block["throttled"] is True
    assert reads.block("head", None, False) == {"reads": 0, "sm_mhz_min": None, "sm_mhz_max": None,
                                                "mem_mhz_min": None, "mem_mhz_max": None, "power_w": None,
                                                "temperature_c": None, "throttle": [], "clocks_held": False,
                                                "throttled": False}


def test_a_query_the_device_does_not_support_is_left_out(nvml_here):
    nvml_here.write_text("power_mw NA\nenergy_dir NA\nsm 1500\n")
    dev = gpu.open_device({"index": 0}, {})
    r = dev.read()
    assert r["power_mw"] is None and r["energy_mj"] is None and r["sm_mhz"] == 1500
    assert {"power", "energy"} <= dev._unsupported  # asked once, then not again


def test_environment_lists_the_gpu_settings(nvml_here):
    nvml_here.write_text("name NVIDIA H100 80GB HBM3\ndriver 550.54.15\ncuda_driver 12040\npersistence 0\n"
                         "ecc 1\nmig 0\napp_sm 1410\napp_sm_default 1980\n")
    env = gpu.environment({})
    assert env == {"gpu_name": "NVIDIA H100 80GB HBM3", "gpu_driver": "550.54.15", "cuda_driver": "12.4",
                   "gpu_persistence": "off", "gpu_ecc": "on", "gpu_mig": "off",
                   "gpu_clocks": "applications clocks SM 1410 MHz"}


def test_without_nvml_telemetry_is_absent_and_said(monkeypatch):
    """No driver here: the binding is found (nvidia-ml-py), NVML does not start, nothing raises."""
    monkeypatch.setattr(gpu, "_binding", {"state": None, "error": None})
    monkeypatch.setattr(pynvml, "nvmlLib", None)
    monkeypatch.setenv("LD_LIBRARY_PATH", "")
    if os.path.exists("/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1"):
        pytest.skip("this machine has an NVIDIA driver")
    assert gpu.open_device({"index": 0}, {}) is None
    assert gpu.unavailable().startswith("NVML did not start")
    assert gpu.environment({}) == {}


# ---------------------------------------------------------------------------------------------
# The whole path: a compare of a step on the stand-in device, through the real CLI.

FAKE_TORCH = """\
# A stand-in for torch with CUDA initialized (no GPU here): the caching allocator's peak statistics,
# reset by reset_peak_memory_stats as torch's are, and the device's identity.
__version__ = "0.0+standin"


class _Props:
    name = "Stand-in GPU"
    uuid = "standin-0"


class _Cuda:
    def __init__(self):
        self.peak = 0

    def is_available(self):
        return True

    def is_initialized(self):
        return True

    def synchronize(self):
        pass

    def current_device(self):
        return 0

    def get_device_properties(self, index):
        return _Props()

    def reset_peak_memory_stats(self):
        self.peak = 0

    def max_memory_allocated(self):
        return self.peak

    def max_memory_reserved(self):
        return self.peak + (32 << 20)  # the allocator's cached blocks

    def _use(self, nbytes):  # what a step's tensors do to the statistics
        self.peak = max(self.peak, nbytes)


cuda = _Cuda()
"""

GPU_STEP = """\
import os
import time

ENERGY_MJ = {energy}  # the stand-in device's energy per step
DEVICE_MB = {mb}  # the step's peak on the device
THROTTLED_ROUND = 2  # the round whose clocks the power cap holds down


def _round(state):
    # every round builds a fresh pair of workers: the builds so far say which round this is
    builds = os.path.join(os.path.dirname(state), "builds")
    with open(builds, "a") as f:
        f.write("built\\n")
    with open(builds) as f:
        return (sum(1 for _ in f) - 1) // 2


def make_step():
    import torch  # the stand-in: CUDA initialized by the factory, as a real model's .cuda() does

    state = os.environ["FAKE_NVML_STATE"]
    r = _round(state)
    tmp = f"{{state}}.{{os.getpid()}}"  # both sides' workers build at once: each writes its own, then replaces
    with open(tmp, "w") as f:  # this round's device: its clocks move; one round is throttled
        f.write(f"sm {{1410 + 30 * r}}\\nreasons {{4 if r == THROTTLED_ROUND else 0}}\\n"
                f"energy_dir {{os.path.dirname(state)}}/energy\\npower_mw {{200000 + 1000 * ENERGY_MJ}}\\n")
    os.replace(tmp, state)
    fd = os.open(os.path.join(os.path.dirname(state), "energy", f"e-{{os.getpid()}}"), os.O_CREAT | os.O_WRONLY)
    spent = [0, True]

    def step():
        if spent[1]:  # the first call's spike (a compile, a workspace), before the peaks are reset
            torch.cuda._use(1024 << 20)
            spent[1] = False
        torch.cuda._use(DEVICE_MB << 20)
        end = time.perf_counter_ns() + 200_000
        while time.perf_counter_ns() < end:
            pass
        spent[0] += ENERGY_MJ
        os.pwrite(fd, b"%020d" % spent[0], 0)
    return step
"""


@pytest.mark.slow
def test_compare_on_a_standin_gpu_marks_throttled_rounds_and_judges_energy_and_device_memory(nvml_dir, tmp_path):
    repo, state = tmp_path / "repo", tmp_path / "dev" / "nvml-state"
    (tmp_path / "dev" / "energy").mkdir(parents=True)
    state.write_text("")
    spec = ("version: 1\nhardware_label: standin-gpu\n"
            f"env: {{FAKE_NVML_STATE: '{state}'}}\n"
            "defaults: {seed: 7, rounds: 10, max_rounds: 10, round_ms: 40, value_ms: 1, profile: 'off'}\n"
            "benchmarks:\n  - {name: gpu-train, callable: 'gstep:make_step'}\n")
    make_repo(repo, [{"torch/__init__.py": FAKE_TORCH, "gstep.py": GPU_STEP.format(energy=2, mb=64),
                      "profopt.yml": spec},
                     {"gstep.py": GPU_STEP.format(energy=3, mb=96)}])
    # one pair of workers a round: the stand-in counts builds to know its round (a step that imports
    # torch gets two pairs a round otherwise)
    env = {"LD_LIBRARY_PATH": str(nvml_dir), "FAKE_NVML_STATE": str(state), "PROFOPT_ROUND_PAIRS": "1"}
    # --measure all: no record run of the step beforehand, whose calls would take one of the stand-in
    # device's scripted rounds
    res = run_cli(["compare", "--base", "HEAD~1", "--head", "HEAD", "--out", "c.json", "--report", "r.md",
                   "--measure", "all"], repo, env=env, timeout=600)
    assert res.returncode in (0, 1), res.stderr[-3000:]
    c = json.loads((repo / "c.json").read_text())
    e = c["benchmarks"][0]
    # the throttled round: marked on both sides, counted, left out of every timed metric's verdict
    for side in ("base", "head"):
        by_round = {s["round"]: s for s in e["samples"][side]}
        assert len(by_round) == 10
        assert [r for r, s in sorted(by_round.items()) if s["gpu"]["throttled"]] == [2]
        assert by_round[2]["gpu"]["throttle"] == ["power_cap"]
        assert all(s["gpu"]["sm_mhz_min"] == 1410 + 30 * r for r, s in by_round.items())
        assert all(s["gpu"]["reads"] >= 2 for s in by_round.values())
        # its energy block spanned the counter's updates (here one a step: the shortest block)
        assert all(s["gpu"]["energy_period_ms"] is not None and 100 <= s["gpu"]["energy_ms"] < 500
                   for s in by_round.values())
    assert e["throttled_rounds"] == 1
    m = e["metrics"]
    assert m["step_time_ms"]["n"] == 9 and m["energy_per_step_j"]["n"] == 9
    # energy per step: the counter's delta over each side's own block, exact on this device
    assert {s["energy_per_step_j"] for s in e["samples"]["base"]} == {0.002}
    assert {s["energy_per_step_j"] for s in e["samples"]["head"]} == {0.003}
    assert m["energy_per_step_j"]["verdict"] == "regressed" and round(m["energy_per_step_j"]["delta_pct"]) == 50
    # device memory: reset after the warm-up (the 1 GB first call is not a step's peak), read per round
    assert {s["cuda_max_allocated_mb"] for s in e["samples"]["base"]} == {64.0}
    assert {s["cuda_max_allocated_mb"] for s in e["samples"]["head"]} == {96.0}
    assert m["cuda_max_allocated_mb"]["verdict"] == "regressed" and m["cuda_max_reserved_mb"]["head"] == 128.0
    # said in the JSON, the report and the terminal, with the remedy
    ids = {n["id"]: n for n in c["notes"] if isinstance(n, dict)}
    assert "SM 1,410–1,680 MHz" in ids["note.gpu_clocks"]["text"] and "nvidia-smi -lgc" in ids["note.gpu_clocks"]["text"]
    assert "1 of 10 rounds were throttled (power cap)" in ids["note.gpu_throttled"]["text"]
    report = (repo / "r.md").read_text()
    assert "lock them with nvidia-smi -lgc" in report and "were left out of the verdict" in report
    assert "energy per step (J)" in report
    assert "GPU clocks were not locked" in res.stderr and "rounds were throttled" in res.stderr
    zh = run_cli(["report", "c.json", "--lang", "zh"], repo, env=env)
    assert "GPU 时钟未锁定" in zh.stdout and "功耗上限" in zh.stdout and "每步能耗" in zh.stdout
    # the environment guard lists the device's settings (read through the stand-in NVML)
    fp = c["head"]["fingerprint"]
    assert (fp["gpu_name"], fp["cuda_driver"], fp["gpu_ecc"], fp["gpu_mig"], fp["gpu_persistence"]) == \
        ("Stand-in GPU", "12.4", "on", "off", "on")


# ---------------------------------------------------------------------------------------------
# torch.compile, for real on CPU

COMPILED = """\
import torch

torch.set_num_threads(1)


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(16, 16)
        self.b = torch.nn.Linear(16, 4)

    def forward(self, x):
        y = torch.relu(self.a(x))
        {extra}
        return self.b(y)


def make_step():
    torch.manual_seed(0)
    net = torch.compile(Net(), backend="eager")
    x = torch.randn(8, 16)

    def step():
        return net(x).sum()
    return step
"""


def test_stepper_keeps_compiles_out_of_every_timed_value():
    """A real torch.compile step whose input shape changes after the warm-up: the value during which
    it recompiles is taken again, and no timed value holds a compile."""
    torch = pytest.importorskip("torch")
    from profopt_ci.harness import timing as harness

    net = torch.compile(torch.nn.Linear(16, 4), backend="eager")
    shapes = {"rows": 8}

    def step():
        net(torch.randn(shapes["rows"], 16)).sum()

    stepper = harness.Stepper(step, value_ms=1.0, warmup=3, warmup_ms=5.0)
    loops = stepper.calibrate()
    stepper.warm(loops)
    calm = [stepper.value_ns() for _ in range(5)]
    shapes["rows"] = 9  # a new shape: dynamo recompiles on the next call
    start = time.perf_counter_ns()
    after = stepper.value_ns()
    spent = time.perf_counter_ns() - start
    counts = stepper.finish()["compile"]
    assert counts["retaken"] >= 1 and counts["recompiles"] >= 1 and counts["frames"] >= 2
    # the value that recompiled took far longer than any step; the one kept is like the others
    assert spent > 5 * after and after < 10 * max(calm)


@pytest.mark.slow
def test_compare_names_the_graph_breaks_head_adds(tmp_path):
    pytest.importorskip("torch")
    repo = tmp_path / "repo"
    spec = ("version: 1\nhardware_label: cpu-compile\n"
            "defaults: {seed: 3, rounds: 3, max_rounds: 3, round_ms: 40, value_ms: 1, profile: 'off'}\n"
            "benchmarks:\n  - {name: compiled, callable: 'cstep:make_step'}\n")
    make_repo(repo, [{"cstep.py": COMPILED.format(extra="pass"), "profopt.yml": spec},
                     {"cstep.py": COMPILED.format(extra="print(y.sum().item(), end='')")}])
    res = run_cli(["compare", "--base", "HEAD~1", "--head", "HEAD", "--out", "c.json", "--report", "r.md"],
                  repo, timeout=600)
    assert res.returncode in (0, 1), res.stderr[-3000:]
    c = json.loads((repo / "c.json").read_text())
    e = c["benchmarks"][0]
    base = [s["compile"] for s in e["samples"]["base"]]
    head = [s["compile"] for s in e["samples"]["head"]]
    assert len(base) == len(head) == 3
    assert all(b["graph_breaks"] == 0 for b in base) and all(h["graph_breaks"] >= 1 for h in head)
    assert all(h["break_reasons"] for h in head)
    note = next(n for n in c["notes"] if isinstance(n, dict) and n["id"] == "note.graph_breaks")
    assert f"head: {max(h['graph_breaks'] for h in head)} graph breaks, base: 0" in note["text"]
    assert "Unsupported Tensor.item()" in note["text"]  # head's own reason, named
    assert "graph breaks, base: 0" in (repo / "r.md").read_text() and "graph breaks, base: 0" in res.stderr
    zh = run_cli(["report", "c.json", "--lang", "zh"], repo)
    assert "次图中断，基线：0 次" in zh.stdout
    # no compile inside a timed value: each round's values are all of a step's size
    for side in ("base", "head"):
        for s in e["samples"][side]:
            values = sorted(s["values_ms"])
            assert values[-1] < 20 * values[len(values) // 2], (side, s["round"], values[-3:])


# ---------------------------------------------------------------------------------------------
# The environment guard: a stored baseline from another GPU setting is refused, as for a CPU model

def test_gpu_settings_both_recorded_are_material_and_persistence_is_not():
    from profopt_ci.store.stored_baselines import material_differences

    stored = {"gpu_name": "H100", "gpu_ecc": "on", "gpu_mig": "off", "gpu_persistence": "on", "cudnn": "9.1.0"}
    assert material_differences(stored, {**stored, "gpu_ecc": "off"}) == [("gpu_ecc", "on", "off")]
    assert material_differences(stored, {**stored, "gpu_mig": "on", "cudnn": "9.5.1"}) == [
        ("cudnn", "9.1.0", "9.5.1"), ("gpu_mig", "off", "on")]
    assert material_differences(stored, {**stored, "gpu_persistence": "off"}) == []
    older = {k: v for k, v in stored.items() if k in ("gpu_name",)}  # from before the settings were read
    assert material_differences(older, stored) == []


@pytest.mark.slow
def test_a_stored_baseline_from_another_ecc_setting_is_refused(nvml_dir, tmp_path):
    from msgspec.structs import replace
    from test_store import FILES, fake_doc

    from profopt_ci.measure.fingerprint import collect
    from profopt_ci.store import stores as store

    root = tmp_path / "repo"
    shas = make_repo(root, [FILES, {"README": "docs only\n"}])
    state = tmp_path / "nvml-state"
    state.write_text("ecc 1\npersistence 1\n")
    seen = {"gpu_name": "Stand-in GPU", "gpu_driver": "550.54.15", "cuda_driver": "12.4", "gpu_clocks": "default",
            "gpu_mig": "off"}
    st = tmp_path / "store"
    doc = fake_doc(shas[0], 0.3)
    store.save(store.DirStore(st), replace(doc, fingerprint={**collect(), **seen, "gpu_ecc": "off",
                                                             "gpu_persistence": "on"}))
    env = {"LD_LIBRARY_PATH": str(nvml_dir), "FAKE_NVML_STATE": str(state)}
    args = ["compare", "--baseline", "stored", "--store", f"dir:{st}", "--base", "HEAD~1"]
    refused = run_cli(args, root, env=env)
    assert refused.returncode == 2, refused.stderr
    assert "gpu_ecc: stored 'off' vs now 'on'" in refused.stderr and "--allow-env-mismatch" in refused.stderr
    # persistence mode alone: listed among the differences, not material, compared
    state.write_text("ecc 0\npersistence 0\n")
    ok = run_cli([*args, "--out", "c.json"], root, env=env)
    assert ok.returncode in (0, 1), ok.stderr
    c = json.loads((root / "c.json").read_text())
    assert {d["key"]: d.get("material") for d in c["differences"] if d["key"].startswith("gpu_")} == \
        {"gpu_persistence": False}
    assert c["head"]["fingerprint"]["gpu_persistence"] == "off"


def test_a_gpu_round_without_nvml_measures_and_says_why_once(tmp_path, monkeypatch):
    """No driver here: the round on the stand-in device is measured as ever; its samples say why
    there is no telemetry, and the notes say it once for every benchmark."""
    import random

    from test_ahead import ALL, _wide
    from test_ahead import FAKE_TORCH as BARE_TORCH
    from test_ahead import GPU_STEP as BARE_STEP

    from profopt_ci.measure import lockstep
    from profopt_ci.measure.cpus import Placement
    from profopt_ci.measure.processes import Side, child_env
    from profopt_ci.pipeline.entries import gpu_notes
    from profopt_ci.specfile.load import parse_spec

    if os.path.exists("/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1"):
        pytest.skip("this machine has an NVIDIA driver")
    monkeypatch.setattr(gpu, "_binding", {"state": None, "error": None})
    monkeypatch.setattr(pynvml, "nvmlLib", None)
    (tmp_path / "torch").mkdir()
    (tmp_path / "torch" / "__init__.py").write_text(BARE_TORCH)
    (tmp_path / "gstep.py").write_text(BARE_STEP)
    spec = parse_spec("version: 1\nbenchmarks:\n  - {name: g, callable: 'gstep:make_step', params: {gpu: true}, "
                      "round_ms: 40}\n", "x.yml")
    b = spec.benchmarks[0]
    sides = [Side("base", tmp_path), Side("head", tmp_path)]
    placement = Placement(pool=ALL)
    placement.cpus = ALL[-1:]
    with _wide():
        out = lockstep.callable_round(lockstep.Round({"base": b, "head": b}, {s.name: child_env(spec, b, s) for s in sides}, sides,
                                 tmp_path, round_index=1, rng=random.Random(0), placement=placement))
    for side in ("base", "head"):
        assert out[side]["gpu"]["reads"] == 0 and out[side]["gpu"]["unavailable"].startswith("NVML did not start")
        assert "energy_per_step_j" not in out[side] and out[side]["cuda_max_allocated_mb"] == 64.0
    entries = [{"name": n, "samples": {"base": [out["base"]], "head": [out["head"]]}} for n in ("g", "g2")]
    said = gpu_notes(entries)
    assert [n["id"] for n in said] == ["note.gpu_unavailable"]
