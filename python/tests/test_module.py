"""`import flashsim` against the `flashsim` executable's own outputs."""

import json

import numpy as np
import pytest

flashsim = pytest.importorskip("flashsim")
if getattr(flashsim, "_core", None) is None:
    pytest.skip(f"flashsim._core did not import: {flashsim._core_error}", allow_module_level=True)


# --- the seed traces ----------------------------------------------------------------------------

@pytest.mark.parametrize("lesson, cycles, loads", [("01-dot-product", 7, 4), ("02-locality", 25, 13),
                                                   ("03-outer-product", 22, 10)])
def test_seed_traces_cycles(source_dir, flashsim_exe, lesson, cycles, loads):
    path = source_dir / "lessons" / lesson / "solution.fsa"
    m = flashsim.run(str(path))
    assert m.done
    assert m.counters["cycles"] == cycles
    assert m.counters["loads"] == loads
    rc, out, _ = flashsim_exe("run", "--json", path)
    assert rc == 0
    cli = json.loads(out)
    assert cli["cycles"] == cycles
    # the whole JSON: same seed, same values, same counts
    assert json.loads(m.json()) == cli


def test_step_back_and_symbols(source_dir):
    m = flashsim.Machine(flashsim.assemble_file(str(source_dir / "lessons/01-dot-product/solution.fsa")), symbolic=True)
    assert m.registers == [None, None, None]
    for _ in range(3):
        m.step()
    assert m.symbols == ["a00", "b00", "a00*b00"]
    a00, b00, r2 = m.registers
    assert r2 == pytest.approx(a00 * b00, rel=1e-6)
    assert m.next_instruction == "LOAD a[0][1], R0"
    assert m.line == 6
    assert m.step_back()
    assert m.pc == 2 and m.register(2) is None and m.counters["cycles"] == 2
    m.run()
    assert m.symbol(2) == "a00*b00 + a01*b10"
    assert m.counters["per_op"] == {"LOAD": 4, "STORE": 1, "MAC_Z": 1, "MAC": 1}
    c = m.array("c")
    a, b = m.array("a"), m.array("b")
    assert c.shape == (1, 1)
    assert c[0, 0] == pytest.approx(a[0, 0] * b[0, 0] + a[0, 1] * b[1, 0], rel=1e-6)
    while m.step_back():
        pass
    assert m.pc == 0 and m.counters["cycles"] == 0


def test_run_to_breakpoint(source_dir):
    m = flashsim.Machine(flashsim.assemble_file(str(source_dir / "lessons/01-dot-product/solution.fsa")))
    assert m.run_to_breakpoint({8})  # the MAC line
    assert m.pc == 5 and m.line == 8 and m.next_instruction.startswith("MAC ")
    assert not m.run_to_breakpoint({8})  # no more MACs: runs to the end
    assert m.done and m.cycles == 7
    m.run_to(3)
    assert m.pc == 3 and m.cycles == 3


def test_inputs_seed_costs(source_dir):
    prog = flashsim.assemble_file(str(source_dir / "lessons/01-dot-product/solution.fsa"))
    m = flashsim.Machine(prog, inputs={"a": [1, 2], "b": [3, 4]}, costs={"LOAD": 100}, f64=True)
    m.run()
    assert m.array("c")[0, 0] == 11.0
    assert m.cycles == 4 * 100 + 3
    s1 = flashsim.Machine(prog, seed=5)
    s2 = flashsim.Machine(prog, seed=5)
    s1.run(), s2.run()
    np.testing.assert_array_equal(s1.array("a"), s2.array("a"))


def test_inputs_as_arrays_of_any_shape(source_dir):
    # a 2-D numpy array raised pybind's TypeError listing the whole signature; values go in row-major
    prog = flashsim.assemble_file(str(source_dir / "lessons/01-dot-product/solution.fsa"))
    m = flashsim.Machine(prog, inputs={"a": np.array([[1.0, 2.0]]), "b": np.array([3, 4], dtype=np.int32)}, f64=True)
    m.run()
    assert m.array("c")[0, 0] == 11.0
    for bad in (None, "12", {"x": 1}, [1, "a"]):
        with pytest.raises(TypeError, match=r"inputs\['a'\]: expected numbers"):
            flashsim.Machine(prog, inputs={"a": bad})


@pytest.mark.parametrize("regs", [-1, 0, 65536, 10**9])
def test_machine_regs_out_of_range(source_dir, regs):
    # -1 and 0 became 1 register ("R1 is outside the machine ... (--regs)"), 10**9 a bare MemoryError
    prog = flashsim.assemble_file(str(source_dir / "lessons/01-dot-product/solution.fsa"))
    with pytest.raises(ValueError, match="regs must be between 1 and 65535"):
        flashsim.Machine(prog, regs=regs)


@pytest.mark.parametrize("l2, error", [(-4, ValueError), (1.5, TypeError), ([1], TypeError)])
def test_machine_l2_bad_value(source_dir, l2, error):
    # these raised RuntimeError "Unable to cast Python instance to C++ type"
    prog = flashsim.assemble_file(str(source_dir / "lessons/01-dot-product/solution.fsa"))
    with pytest.raises(error, match="^l2: "):
        flashsim.Machine(prog, l2=l2)


def test_count_only_registers(source_dir):
    # a count-only run keeps no values: NaN, as its arrays (register() raised IndexError
    # "vector::_M_range_check")
    prog = flashsim.assemble_file(str(source_dir / "lessons/01-dot-product/solution.fsa"))
    m = flashsim.Machine(prog, compute_values=False)
    m.run()
    assert np.isnan(m.register(2)) and np.isnan(m.array("c")).all()
    assert np.isnan(m.registers[0])
    t = flashsim.Machine(flashsim.assemble(flashsim.gen("attention", schedule="fa2", n=128, d=64)), compute_values=False)
    t.step()
    tile = next(r for r in t.registers if r is not None)
    assert tile.shape == (64, 64) and np.isnan(tile).all()


def test_trace_arrays_match_trace_csv(source_dir, flashsim_exe, tmp_path):
    path = source_dir / "lessons/02-locality/solution.fsa"
    m = flashsim.Machine(flashsim.assemble_file(str(path)))
    m.step()
    t = m.trace()
    assert m.pc == 1  # back where it stood
    assert len(t["step"]) == 25
    np.testing.assert_array_equal(t["step"], np.arange(1, 26))
    assert t["cycle"][-1] == 25
    assert list(t["mnemonic"]).count("LOAD") == 13
    csv = tmp_path / "t.csv"
    rc, _, _ = flashsim_exe("run", "--no-table", "--trace-csv", csv, path)
    assert rc == 0
    assert m.trace_csv() == csv.read_text()
    rows = csv.read_text().splitlines()[1:]
    for k, row in enumerate(rows):
        f = row.split(",")
        assert int(f[0]) == t["step"][k] and int(f[1]) == t["line"][k]


def test_step_table_is_the_cli_table(source_dir, flashsim_exe):
    path = source_dir / "lessons/01-dot-product/solution.fsa"
    rc, out, _ = flashsim_exe("run", "--symbolic", path)
    m = flashsim.Machine(flashsim.assemble_file(str(path)), symbolic=True)
    assert out == m.step_table(symbolic=True) + "\n" + m.summary()


def test_assembler_error_location(flashsim_exe, tmp_path):
    text = "# a comment\nLOAD a[0], R0\n  FOO R1, R2\n"
    with pytest.raises(flashsim.AssemblerError) as e:
        flashsim.assemble(text, name="bad.fsa")
    assert (e.value.file, e.value.line, e.value.col) == ("bad.fsa", 3, 3)
    assert "FOO" in e.value.message
    assert isinstance(e.value, ValueError)
    bad = tmp_path / "bad.fsa"
    bad.write_text(text)
    rc, _, err = flashsim_exe("run", bad)
    assert rc == 2
    with pytest.raises(flashsim.AssemblerError) as e2:
        flashsim.assemble_file(str(bad))
    assert err.strip() == str(e2.value)
    assert (e2.value.line, e2.value.col) == (3, 3)


def test_machine_fault():
    m = flashsim.Machine(flashsim.assemble("LOAD x[0], R0\nEXP R1, R2\n", name="f.fsa"))
    m.step()
    with pytest.raises(flashsim.MachineFault) as e:
        m.step()
    assert (e.value.step, e.value.line) == (2, 2)
    assert str(e.value).startswith("step 2 (line 2): error:")


def test_params_and_tile_registers():
    text = flashsim.gen("attention", schedule="fa2", n=128, d=64, br=64, bc=64)
    prog = flashsim.assemble(text, name="fa2.fsa")
    assert not prog.is_scalar
    m = flashsim.Machine(prog)
    m.step()
    r = [x for x in m.registers if x is not None]
    assert len(r) == 1 and isinstance(r[0], np.ndarray) and r[0].shape == (64, 64)
    m.run()
    with pytest.raises(ValueError):
        flashsim.assemble("LOAD x[0], R0\n", params={"nope": 3})


# --- traffic, gen, lessons: the CLI's own outputs -----------------------------------------------

TRAFFIC_CASES = [
    ("attention", ["--schedule", "fa2", "--n", "4096", "--d", "64", "--heads", "8", "--l2", "50MiB", "--sms", "132",
                   "--blocks-per-sm", "2"],
     dict(schedule="fa2", n=4096, d=64, heads=8, l2="50MiB", sms=132, blocks_per_sm=2)),
    ("attention", ["--schedule", "all", "--n", "1024", "--d", "64", "--causal"],
     dict(schedule="all", n=1024, d=64, causal=True)),
    ("matmul", ["--schedule", "outer", "--m", "512", "--n", "512", "--k", "256", "--l2", "1MiB", "--l2-partitions", "2"],
     dict(schedule="outer", m=512, n=512, k=256, l2="1MiB", l2_partitions=2)),
    ("softmax", ["--schedule", "three-pass", "--rows", "64", "--cols", "8192"],
     dict(schedule="three-pass", rows=64, cols=8192)),
]


@pytest.mark.parametrize("kind, cli_args, kwargs", TRAFFIC_CASES)
def test_traffic_json_equals_cli(flashsim_exe, kind, cli_args, kwargs):
    rc, out, err = flashsim_exe("traffic", kind, *cli_args, "--json")
    assert rc == 0, err
    assert flashsim.traffic(kind, **kwargs) == json.loads(out)
    # and byte for byte, through the in-process command line
    rc2, out2, _ = flashsim.cli(["traffic", kind, *cli_args, "--json"])
    assert (rc2, out2) == (rc, out)


def test_traffic_l2_prediction():
    t = flashsim.traffic("attention", schedule="fa2", n=4096, d=64, heads=8, l2="50MiB", sms=132, blocks_per_sm=2)
    total = t["schedules"]["fa2"]["total"]
    assert t["gpu"]["l2_bytes"] == 50 * 2**20
    assert total["hbm_bytes_read"] == 12582912 and total["hbm_bytes_written"] == 4325376  # README's example
    assert total["bytes_read"] > 40 * total["hbm_bytes_read"]


def test_traffic_bad_option():
    with pytest.raises(flashsim.FlashsimCommandError) as e:
        flashsim.traffic("attention", schedule="fa7")
    assert e.value.exit_code == 2 and "fa7" in str(e.value)


@pytest.mark.parametrize("kind, cli_args, kwargs", [
    ("attention", ["--n", "8192", "--d", "128", "--heads", "8"], dict(n=8192, d=128, heads=8)),
    ("attention", ["--n", "4096", "--d", "64", "--causal", "--backward", "--gpu", "h200"],
     dict(n=4096, d=64, causal=True, backward=True, gpu="h200")),
    ("matmul", ["--m", "4096", "--n", "4096", "--k", "4096"], dict(m=4096, n=4096, k=4096)),
    ("softmax", ["--rows", "4096", "--cols", "8192"], dict(rows=4096, cols=8192)),
])
def test_predict_time_equals_cli(flashsim_exe, kind, cli_args, kwargs):
    rc, out, err = flashsim_exe("time", kind, *cli_args, "--json")
    assert rc == 0, err
    assert flashsim.predict_time(kind, **kwargs) == json.loads(out)


def test_predict_time_unit_override():
    # the FA2 order on one tile waits for both of its products: 1000 more cycles of tensor latency
    # are 2000 more cycles (the CLI's test_core case, through the module)
    base = flashsim.predict_time("attention", n=64, d=64, version=2)
    slow = flashsim.predict_time("attention", n=64, d=64, version=2, unit=["tensor:latency=1060"])
    assert slow["cycles"] == pytest.approx(base["cycles"] + 2000)
    assert slow["unit_figures"]["tensor"]["latency"] == 1060 and base["unit_figures"]["tensor"]["latency"] == 60
    with pytest.raises(flashsim.FlashsimCommandError) as e:
        flashsim.predict_time("attention", n=64, unit=["warp:rate=1"])
    assert e.value.exit_code == 2 and "unknown unit 'warp'" in str(e.value)


def test_predict_time_on_off_options_take_bools():
    # pingpong=False and overlap=False were dropped unsaid (the default was timed); True sent a bare
    # --pingpong, which took the next argument as its value
    for key in ("pingpong", "overlap", "warp_specialized", "softmax_under_pv", "rescale_under_s"):
        for value, text in ((True, "on"), (False, "off")):
            kw = dict(n=4096, d=128, version=6)
            assert flashsim.predict_time("attention", **kw, **{key: value}) == \
                flashsim.predict_time("attention", **kw, **{key: text}), (key, value)
    off = flashsim.predict_time("attention", n=4096, d=128, overlap=False)
    assert off["cycles"] > flashsim.predict_time("attention", n=4096, d=128)["cycles"]
    assert flashsim.predict_time("attention", n=4096, d=64, split_tail=False) == \
        flashsim.predict_time("attention", n=4096, d=64, split_tail="off")


def test_predict_time_split_tail_and_kv_order_defaults():
    # the launchers' defaults: the split tail at d = 128 from N = 8192, the causal backward's blocks
    # longest first; the options time the other choice
    split = flashsim.predict_time("attention", n=8192, d=128, heads=32)
    assert split["predicted_ms"] < flashsim.predict_time("attention", n=8192, d=128, heads=32,
                                                         split_tail=False)["predicted_ms"]
    bwd = dict(n=16384, d=128, heads=16, backward=True, causal=True)
    assert flashsim.predict_time("attention", **bwd)["predicted_ms"] < \
        flashsim.predict_time("attention", **bwd, kv_order="shortest-first")["predicted_ms"]
    with pytest.raises(flashsim.FlashsimCommandError) as e:
        flashsim.predict_time("attention", **bwd, kv_order="sideways")
    assert e.value.exit_code == 2 and "--kv-order" in str(e.value)


def test_cli_captures_printf_output(capfd):
    # the tour's tables and `ring --gpu`'s prediction went to the process's stdout, not the result
    rc, out, err = flashsim.cli(["tour"])
    assert rc == 0 and "Step | Inner product" in out and "2x2 outer product (Problem 3)" in out
    rc, out, err = flashsim.cli(["ring", "--n", "4096", "--d", "64", "--p", "2", "--gpu", "h100"])
    assert rc == 0, err
    assert "predicted (" in out
    assert capfd.readouterr().out == ""


def test_units_trace_json_summary_perfetto_equal_cli(flashsim_exe, tmp_path):
    # a .units trace: `flashsim run` adds the time model (JSON "timing", the summary's time model
    # block, Perfetto's unit lanes), which Machine.json(), summary() and perfetto() left out
    trace = tmp_path / "fwd.fsa"
    assert flashsim.cli(["time", "attention", "--n", "256", "--d", "64", "--trace", str(trace)])[0] == 0
    rc, out, err = flashsim_exe("run", "--json", trace)
    assert rc == 0, err
    m = flashsim.run(str(trace))
    assert json.loads(m.json()) == json.loads(out) and "timing" in json.loads(out)
    rc, out, _ = flashsim_exe("run", "--no-table", trace)
    assert m.summary() == out and "time model" in out
    pf = tmp_path / "fwd.json"
    assert flashsim_exe("run", "--no-table", "--perfetto", pf, trace)[0] == 0
    assert m.perfetto() == pf.read_text()
    # a deadlock is the text's error, as the CLI's exit 2
    dead = tmp_path / "dead.fsa"
    dead.write_text(".units h100\n.barrier b count=2\n.stream s\n.wait b\nLOAD x[0], R0\n")
    rc, _, err = flashsim_exe("run", dead)
    assert rc == 2
    m = flashsim.run(str(dead))
    for f in (m.json, m.summary, m.perfetto):
        with pytest.raises(flashsim.AssemblerError) as e:
            f()
        assert str(e.value) == err.strip()


@pytest.mark.parametrize("kind, args", [
    ("matmul", ["--n", "4", "--regs", "12", "--schedule", "outer"]),
    ("attention", ["--schedule", "fa1", "--n", "256", "--d", "64"]),
    ("softmax", ["--n", "8"]),
])
def test_gen_equals_cli(flashsim_exe, kind, args):
    rc, out, err = flashsim_exe("gen", kind, *args)
    assert rc == 0, err
    kwargs = {args[i].lstrip("-").replace("-", "_"): args[i + 1] for i in range(0, len(args), 2)}
    assert flashsim.gen(kind, **kwargs) == out


@pytest.mark.parametrize("lesson, trace", [("02", None), ("01", "lessons/01-dot-product/exercise.fsa"),
                                           ("02", "lessons/03-outer-product/solution.fsa"),
                                           ("11", None), ("15", None)])
def test_lesson_check_equals_cli(source_dir, flashsim_exe, lesson, trace):
    args = ["lesson", "check", lesson] + ([str(source_dir / trace)] if trace else [])
    rc, out, err = flashsim_exe(*args)
    v = flashsim.lesson_check(lesson, str(source_dir / trace) if trace else None)
    assert v.exit_code == rc
    assert v.passed == (rc == 0)
    if not trace:
        out = out.replace("(no FILE given: checking the reference solution)\n", "")
    assert v.report == out


def test_lesson_check_text_and_counts(source_dir):
    text = (source_dir / "lessons/02-locality/solution.fsa").read_text()
    v = flashsim.lesson_check("locality", text=text, name="mine.fsa")
    assert v.passed and v.counts["cycles"] == 25 and v.counts["loads"] == 13
    bad = flashsim.lesson_check("02", text="LOAD a[0][0], R0\nSTORE R0, c[0][0]\n", name="mine.fsa")
    assert not bad.passed and bad.exit_code == 1 and bad.problems
    assert any(l["id"] == "01" for l in flashsim.lessons())


@pytest.mark.parametrize("what", ["missing", "directory"])
def test_lesson_check_unreadable_file_raises(tmp_path, flashsim_exe, what):
    # as `flashsim lesson check` exits 2 with one message; it returned a FAIL verdict
    path = str(tmp_path / "my16.fsa") if what == "missing" else str(tmp_path)
    rc, _, err = flashsim_exe("lesson", "check", "16", path)
    assert rc == 2
    with pytest.raises(flashsim.AssemblerError) as e:
        flashsim.lesson_check("16", path)
    assert str(e.value) == err.strip() and e.value.file == path and e.value.line == 0


def test_help_reads_well():
    assert "step back" in flashsim.Machine.__doc__
    assert "traffic" in flashsim.__doc__
    assert flashsim.traffic.__doc__ and flashsim.lesson_check.__doc__ and flashsim.Machine.trace.__doc__
    rc, out, _ = flashsim.cli(["traffic", "attention", "--help"])
    assert rc == 0 and "--l2" in out
