// The viewer's state model, without a window: what each pane shows at step k.
#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>

#include "isa/assembler.h"
#include "sim/trace_export.h"
#include "tests/json_check.h"
#include "tests/scratch_dir.h"
#include "viewer/catalog.h"
#include "viewer/heatmap.h"
#include "viewer/model.h"

using namespace flashsim;
using viewer::LoadRequest;
using viewer::Model;
using viewer::Touch;
using viewer::Trace;

namespace {

const std::string kLessons = FLASHSIM_TEST_LESSONS_DIR;
const std::string kData = FLASHSIM_TEST_DATA_DIR;

LoadRequest file(const std::string& path, std::map<std::string, std::int64_t> params = {}) {
  LoadRequest r;
  r.path = path;
  r.params = std::move(params);
  return r;
}
LoadRequest lesson(const std::string& name, std::map<std::string, std::int64_t> params = {}) {
  return file(kLessons + "/" + name + "/solution.fsa", std::move(params));
}

std::uint32_t line_of(const Trace& t, const std::string& text) {
  const auto& lines = t.program().source_lines;
  for (std::size_t i = 0; i < lines.size(); ++i)
    if (lines[i].find(text) != std::string::npos) return static_cast<std::uint32_t>(i + 1);
  FAIL("no line contains " << text);
  return 0;
}

std::uint64_t bytes_after(Trace& t, std::uint64_t k) {
  t.seek(k);
  return t.dram_bytes();
}

}  // namespace

TEST_CASE("at step 0 nothing is current and the first instruction is next", "[viewer]") {
  Trace t(lesson("03-outer-product"));
  CHECK(t.step() == 0);
  CHECK(t.size() == 22);
  CHECK_FALSE(t.current_index());
  CHECK(t.current_line() == 0);
  CHECK(t.next_line() == line_of(t, "LOAD a[0][0], R0"));
  CHECK(t.changed_registers().empty());
  CHECK_FALSE(t.touched());
  REQUIRE(t.next_touch());
  CHECK(t.next_touch()->array == *t.program().find_array("a"));
  for (int r = 0; r < t.machine().register_count(); ++r) CHECK_FALSE(t.register_row(r).written);
}

TEST_CASE("step k highlights the lesson table's row k: instruction, changed register, touched cell", "[viewer]") {
  Trace t(lesson("03-outer-product"));
  REQUIRE(t.machine().symbolic());
  t.step_forward();  // 1: LOAD a[0][0], R0
  CHECK(t.current_line() == line_of(t, "LOAD a[0][0], R0"));
  CHECK(t.changed_registers() == std::vector<int>{0});
  CHECK(t.register_row(0).symbolic == "a00");
  CHECK(t.register_row(0).changed);
  REQUIRE(t.touched());
  CHECK(*t.touched() == Touch{*t.program().find_array("a"), 0, false});
  t.step_forward();  // 2: LOAD b[0][0], R1
  t.step_forward();  // 3: MAC_Z R0, R1, R2
  CHECK(t.instruction_text(*t.current_index()) == "MAC_Z R0, R1, R2");
  CHECK(t.changed_registers() == std::vector<int>{2});
  auto r2 = t.register_row(2);
  CHECK(r2.changed);
  CHECK(r2.symbolic == "a00*b00");
  CHECK_FALSE(r2.numeric.empty());
  CHECK_FALSE(t.register_row(1).changed);
  CHECK_FALSE(t.register_row(3).written);
  CHECK_FALSE(t.touched());  // a MAC touches no DRAM
  // The heat map counts what has been read so far.
  auto b = *t.program().find_array("b");
  CHECK(t.machine().array(b).tile_reads == std::vector<std::uint32_t>{1, 0, 0, 0});
  t.seek(22);  // STORE R5, c[1][1]
  REQUIRE(t.touched());
  CHECK(*t.touched() == Touch{*t.program().find_array("c"), 3, true});
  CHECK(t.machine().array(b).tile_reads == std::vector<std::uint32_t>{2, 1, 2, 1});
  CHECK(t.max_tile_reads(b) == 2);
  CHECK(t.next_line() == 0);
}

TEST_CASE("stepping back restores registers, counters, heat map and line counts", "[viewer]") {
  Trace t(lesson("03-outer-product"));
  t.seek(3);
  std::string at3 = viewer::dump_trace(t);
  t.step_forward();
  CHECK(t.changed_registers() == std::vector<int>{1});
  REQUIRE(t.step_back());
  CHECK(viewer::dump_trace(t) == at3);
  t.step_back();
  t.step_back();
  CHECK(t.changed_registers() == std::vector<int>{0});
  CHECK_FALSE(t.register_row(2).written);
  CHECK(t.machine().counters().cycles == 1);
  CHECK(t.line_hits(line_of(t, "LOAD b[0][0], R1")) == 0);
  t.step_back();
  CHECK_FALSE(t.step_back());  // nothing before step 0
  CHECK(t.step() == 0);
}

TEST_CASE("the counting pass agrees with the machine's counters over the whole trace", "[viewer]") {
  for (auto req : {lesson("01-dot-product"), lesson("03-outer-product"), lesson("06-online-softmax", {{"n", 12}}),
                   file(kData + "/tile_matmul.fsa")}) {
    Trace t(req);
    t.seek(t.size());
    REQUIRE(t.done());
    const auto& live = t.machine().counters();
    const auto& pass = t.final_counters();
    CHECK(pass.cycles == live.cycles);
    CHECK(pass.per_op == live.per_op);
    CHECK(pass.bytes_read == live.bytes_read);
    CHECK(pass.bytes_written == live.bytes_written);
    CHECK(pass.elem_reads == live.elem_reads);
    for (std::uint32_t a = 0; a < t.program().arrays.size(); ++a) {
      const auto& s = t.machine().array(a);
      CHECK(t.max_tile_reads(a) == *std::max_element(s.tile_reads.begin(), s.tile_reads.end()));
      CHECK(t.max_tile_writes(a) == *std::max_element(s.tile_writes.begin(), s.tile_writes.end()));
    }
    CHECK(t.bytes_series().total() == live.bytes_read + live.bytes_written);
  }
}

TEST_CASE("bytes over time: exact at every step of a short trace", "[viewer]") {
  Trace t(lesson("03-outer-product"));
  const auto& s = t.bytes_series();
  CHECK(s.stride == 1);
  REQUIRE(s.samples.size() == 23);
  for (std::uint64_t k = 0; k <= 22; ++k) CHECK(s.at(k) == bytes_after(t, k));
}

TEST_CASE("bytes over time stays small and exact at its samples on a long trace", "[viewer]") {
  Trace t(lesson("06-online-softmax", {{"n", 3000}}));
  const auto& s = t.bytes_series();
  CHECK(t.size() == 14 * 3000 - 4);
  CHECK(s.samples.size() <= viewer::kMaxSeriesSamples + 1);
  CHECK(s.stride > 1);
  for (std::uint64_t i : {0ull, 1ull, 7ull, 100ull, 1000ull, static_cast<unsigned long long>(s.samples.size() - 2)}) {
    std::uint64_t k = i * s.stride;
    CHECK(s.at(k) == bytes_after(t, k));
  }
  CHECK(s.at(t.size()) == bytes_after(t, t.size()));
}

TEST_CASE("breakpoints sit on lines with code; run to breakpoint stops before that line", "[viewer]") {
  Model m;
  REQUIRE(m.open(0, lesson("06-online-softmax")));
  Trace& t = *m.trace(0);
  CHECK_FALSE(t.toggle_breakpoint(1));  // a comment
  CHECK_FALSE(t.toggle_breakpoint(999));
  std::uint32_t body = line_of(t, "MUL R2, R3, R2");
  REQUIRE(t.toggle_breakpoint(body));
  REQUIRE(m.run_to_breakpoint());
  CHECK(t.next_line() == body);
  CHECK(t.line_hits(body) == 0);
  REQUIRE(m.run_to_breakpoint());  // one loop iteration later
  CHECK(t.next_line() == body);
  CHECK(t.line_hits(body) == 1);
  REQUIRE(t.toggle_breakpoint(body));  // off again
  CHECK(t.breakpoints().empty());
  CHECK_FALSE(m.run_to_breakpoint());  // runs to the end
  CHECK(t.done());
}

TEST_CASE("lockstep: two traces step together; the shorter one waits at its end", "[viewer]") {
  Model m;
  REQUIRE(m.open(0, lesson("05-safe-softmax", {{"n", 8}})));
  REQUIRE(m.open(1, lesson("06-online-softmax", {{"n", 8}})));
  REQUIRE(m.compare());
  Trace& a = *m.trace(0);
  Trace& b = *m.trace(1);
  for (int i = 0; i < 10; ++i) m.step();
  CHECK(a.step() == 10);
  CHECK(b.step() == 10);
  m.step_back();
  CHECK(a.step() == 9);
  CHECK(b.step() == 9);
  std::uint64_t shorter = std::min(a.size(), b.size()), longer = std::max(a.size(), b.size());
  REQUIRE(shorter < longer);
  m.seek(longer);
  CHECK(a.done());
  CHECK(b.done());
  CHECK(m.step_index() == longer);
  m.step_back();  // only the longer trace was at the shared position
  CHECK(m.step_index() == longer - 1);
  CHECK(std::min(a.step(), b.step()) == shorter);
  // Online softmax reads x twice; the three-pass one three times.
  CHECK(b.final_counters().elem_reads == 2 * 8);
  CHECK(a.final_counters().elem_reads == 3 * 8);
  // A trace opened later joins at the shared step.
  m.seek(5);
  REQUIRE(m.open(1, lesson("03-outer-product")));
  CHECK(m.trace(1)->step() == 5);
  m.close(0);
  CHECK_FALSE(m.compare());
  CHECK(m.trace(0)->title() == "03-outer-product/solution.fsa");
}

TEST_CASE("the animated run advances speed x time steps and pauses where it must", "[viewer]") {
  Model m;
  REQUIRE(m.open(0, lesson("03-outer-product")));
  m.set_speed(10);
  CHECK(m.tick(1.0) == 0);  // not running
  m.run();
  CHECK(m.tick(0.5) == 5);
  CHECK(m.tick(0.05) == 0);  // half a step carried...
  CHECK(m.tick(0.05) == 1);  // ...and completed
  CHECK(m.step_index() == 6);
  CHECK(m.tick(0.5, 2) == 2);  // the per-frame budget caps the work
  m.set_speed(1000);
  m.tick(10.0);
  CHECK(m.all_done());
  CHECK_FALSE(m.running());
  m.reset();
  REQUIRE(m.trace(0)->toggle_breakpoint(line_of(*m.trace(0), "STORE R2, c[0][0]")));
  m.run();
  m.tick(10.0);
  CHECK_FALSE(m.running());
  CHECK(m.step_index() == 18);
}

TEST_CASE("a file that does not assemble reports FILE:LINE:COL and keeps what was open", "[viewer]") {
  Model m;
  REQUIRE(m.open(0, lesson("01-dot-product")));
  CHECK_FALSE(m.open(0, file(kData + "/bad_operand.fsa")));
  CHECK(m.error().find("bad_operand.fsa:3:1: error: ADD takes 3 operands") != std::string::npos);
  CHECK(m.error_context() == " 3 | ADD R0, R0\n   | ^");
  REQUIRE(m.trace(0));
  CHECK(m.trace(0)->title() == "01-dot-product/solution.fsa");
  CHECK(m.dump().find("error: ") != std::string::npos);
  CHECK_FALSE(m.open(1, file(kData + "/no_such_file.fsa")));
  CHECK(m.error().find("no_such_file.fsa") != std::string::npos);
  CHECK_FALSE(m.compare());
}

TEST_CASE("a runtime fault stops the run and names its step and line", "[viewer]") {
  Model m;
  REQUIRE(m.open(0, file(kData + "/div_zero.fsa")));
  m.set_speed(100);
  m.run();
  m.tick(1.0);
  CHECK_FALSE(m.running());
  Trace& t = *m.trace(0);
  CHECK(t.step() == 2);
  CHECK(t.fault() == "step 3 (line 6): error: division by zero: R1 is 0");
  CHECK(m.dump().find("fault: step 3 (line 6)") != std::string::npos);
  m.step_back();
  CHECK(t.fault().empty());
}

TEST_CASE("tile traces: tiles as heat-map cells, tile registers, SRAM", "[viewer]") {
  Trace t(file(kData + "/tile_matmul.fsa"));
  REQUIRE(t.tile_machine());
  auto a = *t.program().find_array("a");
  CHECK(t.program().arrays[a].tile_count() == 4);
  t.seek(3);  // MAC_Z of two 4x4 tiles
  auto r2 = t.register_row(2);
  CHECK(r2.changed);
  CHECK(r2.numeric.rfind("4x4 @(0,0)", 0) == 0);
  CHECK(t.machine().sram_in_use() == 3 * 64);
  t.seek(t.size());
  // Each tile of A is loaded once per output tile column: twice.
  CHECK(t.machine().array(a).tile_reads == std::vector<std::uint32_t>{2, 2, 2, 2});
  CHECK(t.max_tile_writes(*t.program().find_array("c")) == 1);
  CHECK(dump_trace(t).find("sram: in_use=192 peak=192 capacity=256") != std::string::npos);
}

TEST_CASE("long traces start without the symbolic shadow", "[viewer]") {
  Trace big(lesson("06-online-softmax", {{"n", 15000}}));
  CHECK(big.size() > viewer::kSymbolicLimit);
  CHECK_FALSE(big.machine().symbolic());
  big.seek(big.size() / 2);
  CHECK(big.register_row(0).symbolic.empty());
  CHECK_FALSE(big.register_row(0).numeric.empty());
  Trace small(lesson("06-online-softmax"));
  CHECK(small.machine().symbolic());
}

TEST_CASE("budgets read the counters the lessons name", "[viewer]") {
  Trace t(lesson("03-outer-product"));
  t.seek(t.size());
  const auto& c = t.machine().counters();
  CHECK(viewer::budget_value(c, "cycles") == 22u);
  CHECK(viewer::budget_value(c, "loads") == 10u);
  CHECK(viewer::budget_value(c, "stores") == 4u);
  CHECK(viewer::budget_value(c, "macs") == 8u);
  CHECK(viewer::budget_value(c, "MAC_Z") == 4u);
  CHECK(viewer::budget_value(c, "dram_reads") == 10u);
  CHECK_FALSE(viewer::budget_value(c, "nonsense"));
  t.set_lesson("03-outer-product", {{"cycles", 22}, {"loads", 10}});
  CHECK(viewer::dump_trace(t).find("budget: cycles 22/22 (whole trace 22)") != std::string::npos);
}

TEST_CASE("catalog: lessons by name, parameters from .param lines", "[viewer]") {
  auto cat = viewer::full_catalog(kLessons);
  const auto* online = viewer::find_entry(cat, "online-softmax");
  REQUIRE(online);
  CHECK(online->name == "06-online-softmax");
  REQUIRE(online->params.size() == 1);
  CHECK(online->params[0].name == "n");
  CHECK(online->params[0].value == 8);
  CHECK(viewer::find_entry(cat, "06-online-softmax") == online);
  CHECK(viewer::find_entry(cat, "no-such-thing") == nullptr);
  Model m;
  REQUIRE(m.open(0, online->request({{"n", 16}})));
  CHECK(m.trace(0)->size() == 14 * 16 - 4);
  CHECK(m.trace(0)->params()[0].value == 16);

  auto spec = viewer::parse_spec("online-softmax:n=16,k=-2");
  CHECK(spec.first == "online-softmax");
  CHECK(spec.second == std::map<std::string, std::int64_t>{{"n", 16}, {"k", -2}});
  CHECK(viewer::parse_spec("plain").second.empty());
  CHECK_THROWS_AS(viewer::parse_spec("x:n=abc"), std::invalid_argument);
  CHECK_THROWS_AS(viewer::parse_spec("x:n"), std::invalid_argument);

  auto params = viewer::scan_params({"# .param hidden = 3", ".param n = 8", "  .param m=2  # two", ".param e = n*2"});
  REQUIRE(params.size() == 3);
  CHECK(params[0].name == "n");
  CHECK(params[1].name == "m");
  CHECK(params[1].value == 2);
  CHECK(params[2].name == "e");
}

TEST_CASE("generated schedules open by name; programs without text show their disassembly", "[viewer]") {
  auto cat = viewer::full_catalog(kLessons);
  const auto* fa2 = viewer::find_entry(cat, "tile-attention-fa2");
  REQUIRE(fa2);
  REQUIRE(fa2->generate);
  Model m;
  REQUIRE(m.open(0, fa2->request({{"n", 128}, {"d", 32}, {"br", 32}, {"bc", 32}})));
  Trace& t = *m.trace(0);
  CHECK(t.title() == "tile-attention-fa2 bc=32 br=32 d=32 n=128");
  CHECK(t.tile_machine());
  REQUIRE(t.program().source_lines.size() >= t.size());
  // Every instruction sits on the disassembly line that prints it.
  for (std::uint64_t i = 0; i < t.size(); i += 7)
    CHECK(t.program().source_lines[t.program().loc(i).line - 1] == t.instruction_text(i));
  t.seek(t.size());
  CHECK(t.machine().sram_peak() > 0);
  CHECK(t.machine().sram_peak() <= 192 * 1024);
  // FlashAttention-2 keeps each Q block resident: every Q tile is read exactly once.
  auto q = *t.program().find_array("Q");
  for (auto c : t.machine().array(q).tile_reads) CHECK(c == 1);

  const auto* online = viewer::find_entry(cat, "softmax-online");
  REQUIRE(online);
  REQUIRE(m.open(1, online->request({{"n", 16}})));
  CHECK(m.trace(1)->final_counters().elem_reads == 32);
  // Bad parameters are refused while generating (the app shows the message in its banner).
  CHECK_THROWS_WITH(online->request({{"n", 0}}), Catch::Contains("n must be between 1 and 1000000"));
}

TEST_CASE("fast run on a long trace advances thousands of steps per frame from where it is", "[viewer]") {
  Model m;
  REQUIRE(m.open(0, lesson("06-online-softmax", {{"n", 20000}})));  // 280,005 steps
  m.seek(100'000);
  m.set_speed(1'000'000);
  m.run();
  // One 60 Hz frame at 1M steps/s: 16,666 steps (the fraction carries to the next frame).
  CHECK(m.tick(1.0 / 60.0) == 16'666);
  CHECK(m.step_index() == 116'666);
  CHECK(m.tick(1.0 / 60.0) == 16'667);
  CHECK(m.step_index() == 133'333);
  // The state is the machine's, stepped forward: the same counters as a trace seeked there.
  Trace fresh(lesson("06-online-softmax", {{"n", 20000}}));
  fresh.seek(133'333);
  CHECK(m.trace(0)->machine().counters().cycles == fresh.machine().counters().cycles);
  CHECK(m.trace(0)->machine().counters().bytes_read == fresh.machine().counters().bytes_read);
  CHECK(m.trace(0)->machine().array(0).tile_reads == fresh.machine().array(0).tile_reads);
}

TEST_CASE("heat layout: a big array fits the space given, binned as little as possible", "[viewer]") {
  isa::ArrayDecl x;
  x.name = "x";
  x.rank = 1;
  x.rows = 71'429;
  x.cols = 1;
  auto l = viewer::heat_layout(x, 452, 168, 4);
  CHECK(l.linear);
  CHECK(l.cells_across == 113);
  CHECK(l.width_px() <= 452);
  CHECK(l.height_px() <= 168);
  CHECK(l.per_cell == 16);  // 113 x 42 = 4746 cells: 4746 x 16 >= 71,429 elements > 4746 x 15
  CHECK(l.cells_across * l.cells_down * l.per_cell >= 71'429);
  CHECK(l.cell_of(0) == 0);
  CHECK(l.cell_of(15) == 0);
  CHECK(l.cell_of(16) == 1);
  CHECK(l.cell_of(71'428) == 4464);
  CHECK(l.cells_down == 40);  // 4465 cells, 113 a row
  CHECK(l.cell_used(4464));
  CHECK_FALSE(l.cell_used(4465));
  auto span = l.tiles_of(4464);
  CHECK(span.r0 == 4464 * 16);
  CHECK(span.r1 == 71'429);  // the last cell is short

  isa::ArrayDecl a;  // 2-D: keeps its shape, blocks of tiles per cell
  a.name = "a";
  a.rank = 2;
  a.rows = 1000;
  a.cols = 300;
  auto b = viewer::heat_layout(a, 400, 200, 4);
  CHECK_FALSE(b.linear);
  CHECK(b.block_cols == 3);   // 300 columns in at most 100 cells
  CHECK(b.block_rows == 20);  // 1000 rows in at most 50 cells
  CHECK(b.cells_across == 100);
  CHECK(b.cells_down == 50);
  CHECK(b.cell_of(0) == 0);
  CHECK(b.cell_of(2) == 0);
  CHECK(b.cell_of(3) == 1);
  CHECK(b.cell_of(20 * 300) == 100);  // row 20 starts the second row of cells
  auto s = b.tiles_of(101);
  CHECK(s.r0 == 20);
  CHECK(s.r1 == 40);
  CHECK(s.c0 == 3);
  CHECK(s.c1 == 6);
}

TEST_CASE("heat cells keep the largest count; stepping repaints exactly what a full rebuild paints", "[viewer]") {
  Trace t(lesson("06-online-softmax", {{"n", 5000}}));  // x[5000], out[5000]: texture-sized arrays
  const std::uint32_t x = *t.program().find_array("x");
  const auto& decl = t.program().arrays[x];
  REQUIRE(decl.tile_count() > viewer::kTextureHeatCells);
  auto l = viewer::heat_layout(decl, 300, 100, 4);
  REQUIRE(l.per_cell > 1);
  t.seek(t.size());
  const auto& counts = t.machine().array(x);
  auto cells = viewer::bin_counts(l, counts.tile_reads, counts.tile_writes);
  for (std::int64_t c = 0; c < l.cell_count(); ++c) {
    if (!l.cell_used(c)) continue;
    auto span = l.tiles_of(c);
    std::uint32_t most = 0;
    for (auto k = span.r0; k < span.r1; ++k) most = std::max(most, counts.tile_reads[static_cast<std::size_t>(k)]);
    CHECK(cells.reads[static_cast<std::size_t>(c)] == most);
  }
  CHECK(*std::max_element(cells.reads.begin(), cells.reads.end()) == t.max_tile_reads(x));

  // Incremental: from step 1000 to 1400, rebin and repaint only the cells those steps touched.
  t.seek(1000);
  auto inc = viewer::bin_counts(l, t.machine().array(x).tile_reads, t.machine().array(x).tile_writes);
  std::vector<std::uint32_t> image, full;
  viewer::heat_image(l, inc, t.max_tile_reads(x), t.max_tile_writes(x), image);
  for (std::uint64_t i = 1000; i < 1400; ++i) {
    t.step_forward();
    if (auto touch = t.touch_at(i); touch && touch->array == x) {
      viewer::rebin_cell(l, t.machine().array(x).tile_reads, t.machine().array(x).tile_writes, l.cell_of(touch->tile), inc);
      viewer::paint_cell(l, inc, l.cell_of(touch->tile), t.max_tile_reads(x), t.max_tile_writes(x), image);
    }
  }
  auto rebuilt = viewer::bin_counts(l, t.machine().array(x).tile_reads, t.machine().array(x).tile_writes);
  CHECK(inc.reads == rebuilt.reads);
  CHECK(inc.writes == rebuilt.writes);
  viewer::heat_image(l, rebuilt, t.max_tile_reads(x), t.max_tile_writes(x), full);
  CHECK(image == full);
  // Never-read cells are the empty colour; gaps between cells are transparent.
  CHECK(full[0] != viewer::kHeatEmptyRgba);  // x[0] has been read
  CHECK(full[static_cast<std::size_t>(l.cell_px - 1)] == 0u);
  CHECK(full.back() == 0u);
}

TEST_CASE("File > Export writes the step CSV and Perfetto JSON of flashsim run and keeps the step", "[viewer][export]") {
  Model m;
  REQUIRE(m.open(0, lesson("06-online-softmax")));
  for (int i = 0; i < 5; ++i) REQUIRE(m.step());
  Trace& t = *m.trace(0);
  const std::uint32_t loop_line = t.program().loc(4).line;
  const std::uint64_t hits = t.line_hits(loop_line);
  const auto registers = t.register_row(1).numeric;
  flashsim::test::ScratchDir tmp;
  REQUIRE(m.export_trace(0, tmp.path("steps.csv"), Model::ExportFormat::StepsCsv));
  REQUIRE(m.export_trace(0, tmp.path("run.json"), Model::ExportFormat::Perfetto));
  CHECK(m.error().empty());
  CHECK(t.step() == 5);
  CHECK(t.line_hits(loop_line) == hits);
  CHECK(t.register_row(1).numeric == registers);

  // The same exporter as the CLI: a fresh machine on the same program writes the same bytes.
  sim::Machine fresh(t.program());
  std::ostringstream csv, json;
  sim::export_trace(fresh, {&csv, &json});
  auto slurp = [](const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  CHECK(slurp(tmp.path("steps.csv")) == csv.str());
  CHECK(slurp(tmp.path("run.json")) == json.str());
  CHECK(flashsim::test::parse_csv(csv.str()).size() == t.size() + 1);
  auto doc = flashsim::test::parse_json(json.str());
  CHECK(doc.at("traceEvents").array.size() > t.size());

  CHECK(Model::default_export_name(t, Model::ExportFormat::StepsCsv) == "solution.steps.csv");
  CHECK(Model::default_export_name(t, Model::ExportFormat::Perfetto) == "solution.perfetto.json");
  CHECK_FALSE(m.export_trace(0, tmp.path("no/such/dir/steps.csv"), Model::ExportFormat::StepsCsv));
  CHECK(m.error() == "export: cannot write '" + tmp.path("no/such/dir/steps.csv") + "'");
  CHECK_FALSE(m.export_trace(1, tmp.path("b.csv"), Model::ExportFormat::StepsCsv));
}

TEST_CASE("Units panel: lanes per unit and stream, bars in cycles, busy %, the current step", "[viewer][units]") {
  Trace t(file(kData + "/units_two_streams.fsa"));
  REQUIRE(t.timing());
  REQUIRE(t.timing_error().empty());
  CHECK(t.timing()->cycles == Approx(9).margin(1e-3));
  auto v = t.units_view(1, 900);
  CHECK(v.c0 == 0);
  CHECK(v.c1 == Approx(9).margin(1e-3));
  CHECK(v.bound == "vector");
  CHECK_FALSE(v.now);
  REQUIRE(v.lanes.size() == 7);
  std::vector<std::string> labels;
  for (const auto& l : v.lanes) labels.push_back(l.label);
  CHECK(labels == std::vector<std::string>{"memory", "tensor", "special", "vector", "stream load", "stream a", "stream b"});
  CHECK(v.lanes[2].busy == "44.4 %");
  CHECK(v.lanes[3].busy == "88.9 %");
  CHECK(v.lanes[1].busy == "0.0 %");
  CHECK(v.lanes[6].busy == "88.9 %");  // stream b: its bars cover 1..9
  CHECK(v.lanes[0].unit);
  CHECK_FALSE(v.lanes[4].unit);
  REQUIRE(v.lanes[3].bars.size() == 2);
  CHECK(v.lanes[3].bars[1].x0 == Approx(5).margin(1e-3));
  CHECK(v.lanes[3].bars[1].x1 == Approx(9).margin(1e-3));
  CHECK(v.lanes[3].bars[1].critical);
  for (const auto& l : v.lanes) CHECK_FALSE(l.current);

  // Step 3 ran the EXP: its bar is current on the special lane and on stream a's, nowhere else.
  t.seek(3);
  v = t.units_view(1, 900);
  REQUIRE(v.now);
  CHECK(*v.now == Approx(0).margin(1e-3));
  for (std::size_t l = 0; l < v.lanes.size(); ++l) {
    INFO(v.lanes[l].label);
    CHECK(static_cast<bool>(v.lanes[l].current) == (l == 2 || l == 5));
  }
  CHECK(v.lanes[2].current->x1 == Approx(4).margin(1e-3));
  CHECK_FALSE(v.lanes[2].current->critical);

  // Zoom 4: a quarter of the run, centred on the current bar (0..4), clamped at 0.
  v = t.units_view(4, 900);
  CHECK(v.c0 == Approx(0.875).margin(1e-3));
  CHECK(v.c1 == Approx(3.125).margin(1e-3));
  CHECK(v.lanes[3].bars.size() == 1);  // the MUL (5..9) is outside the window
  t.seek(5);
  v = t.units_view(4, 900);
  CHECK(v.c0 == Approx(5.875).margin(1e-3));  // centred on the MUL (5..9)
  CHECK(v.c1 == Approx(8.125).margin(1e-3));
  v = t.units_view(1.5, 900);
  CHECK(v.c1 == Approx(9).margin(1e-3));  // clamped at the end
  CHECK(v.c0 == Approx(3).margin(1e-3));
  CHECK(v.lanes[3].current->critical);

  const std::string dump = viewer::dump_trace(t);
  CHECK(dump.find("units: cycles=9 bound=vector now=5\n") != std::string::npos);
  CHECK(dump.find("lane vector: busy 88.9 % rows=1 bars=2 current=5..9 critical\n") != std::string::npos);
}

TEST_CASE("Units panel: a deadlock is kept as the trace's timing error; no .units, no panel", "[viewer][units]") {
  flashsim::test::ScratchDir tmp;
  std::ifstream in(kData + "/units_two_streams.fsa");
  std::stringstream text;
  text << in.rdbuf() << ".stream c\n.wait never\nMOV R3, R5\n";
  const std::string path = tmp.path("dead.fsa");
  std::ofstream(path) << text.str();
  Trace t(file(path));
  CHECK_FALSE(t.timing());
  CHECK(t.timing_error().rfind(path + ":20:1: error: deadlock", 0) == 0);
  CHECK(t.units_view(1, 100).lanes.empty());
  CHECK(t.step_forward());  // the machine still steps

  Trace plain(lesson("03-outer-product"));
  CHECK_FALSE(plain.timing());
  CHECK(plain.timing_error().empty());
  CHECK(viewer::dump_trace(plain).find("units:") == std::string::npos);
}

TEST_CASE("File > Export Perfetto of a trace with .units writes the time model's lanes", "[viewer][units][export]") {
  flashsim::test::ScratchDir tmp;
  Model m;
  REQUIRE(m.open(0, file(kData + "/units_two_streams.fsa")));
  const std::string out = tmp.path("units.json");
  REQUIRE(m.export_trace(0, out, Model::ExportFormat::Perfetto));
  std::ifstream in(out);
  std::stringstream text;
  text << in.rdbuf();
  const auto doc = flashsim::test::parse_json(text.str());
  std::vector<std::string> tracks;
  for (const auto& e : doc.at("traceEvents").array)
    if (e.at("ph").string == "M" && e.at("name").string == "thread_name") tracks.push_back(e.at("args").at("name").string);
  CHECK(tracks == std::vector<std::string>{"memory unit", "tensor unit", "special unit", "vector unit", "stream load",
                                           "stream a", "stream b"});
}
