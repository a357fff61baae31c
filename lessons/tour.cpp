#include "lessons/tour.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>
#include <sstream>

#include "isa/assembler.h"
#include "sim/cli.h"
#include "sim/machine.h"
#include "sim/report.h"
#include "sim/traffic.h"

namespace flashsim::lessons {

namespace {

struct TourArgs {
  std::string lessons_dir = FLASHSIM_SOURCE_LESSONS_DIR;
  long n = 8;
  bool brief = false;
};

sim::Machine run_lesson(const TourArgs& a, const std::string& rel, std::int64_t n = 0, bool symbolic = false) {
  isa::AssembleOptions ao;
  if (n) ao.params["n"] = n;
  sim::MachineOptions mo;
  mo.symbolic = symbolic;
  sim::Machine m(isa::assemble_file(a.lessons_dir + "/" + rel, ao), mo);
  return m;
}

// Two step tables next to each other, one row per step.
void side_by_side(sim::Machine& left, sim::Machine& right, const std::string& lt, const std::string& rt) {
  std::ostringstream a, b;
  sim::TableOptions t;
  t.symbolic = false;
  auto lines = [](sim::Machine& m) {
    std::vector<std::string> out;
    m.reset();
    while (!m.done()) {
      std::uint64_t k = m.pc();
      m.step();
      out.push_back(isa::format_instruction(m.program(), m.program().code[k]));
    }
    return out;
  };
  auto l = lines(left), r = lines(right);
  std::size_t w = lt.size();
  for (const auto& s : l) w = std::max(w, s.size());
  cli::print_out("%-4s | %-*s | %s\n", "Step", static_cast<int>(w), lt.c_str(), rt.c_str());
  cli::print_out("-----+-%s-+-%s\n", std::string(w, '-').c_str(), std::string(rt.size() + 8, '-').c_str());
  for (std::size_t i = 0; i < std::max(l.size(), r.size()); ++i)
    cli::print_out("%-4zu | %-*s | %s\n", i + 1, static_cast<int>(w), i < l.size() ? l[i].c_str() : "",
                   i < r.size() ? r[i].c_str() : "");
}

void cost_row(const char* name, const sim::Machine& m) {
  const auto& c = m.counters();
  cli::print_out("%-34s %9d %7llu %6llu %7llu %5llu %10llu %11llu\n", name, m.register_count(),
                 static_cast<unsigned long long>(c.cycles),
                 static_cast<unsigned long long>(c.of_class(isa::OpClass::Load)),
                 static_cast<unsigned long long>(c.of_class(isa::OpClass::Store)),
                 static_cast<unsigned long long>(c.of_class(isa::OpClass::Mac)),
                 static_cast<unsigned long long>(c.elem_reads), static_cast<unsigned long long>(c.elem_writes));
}

void cost_header() {
  cli::print_out("%-34s %9s %7s %6s %7s %5s %10s %11s\n", "trace", "registers", "cycles", "LOADs", "STOREs", "MACs",
                 "DRAM reads", "DRAM writes");
}

double mib(std::uint64_t b) { return static_cast<double>(b) / (1024.0 * 1024.0); }

int do_tour(const TourArgs& a) {
  cli::print_out("== Problem 1: c00 on the 3-register machine ==\n\n");
  auto p1 = run_lesson(a, "01-dot-product/solution.fsa", 0, true);
  sim::TableOptions sym;
  sym.symbolic = true;
  sim::print_step_table(p1, std::cout, sym);

  cli::print_out("\n== Problems 2 and 3: the 2x2 product, inner vs outer ==\n\n");
  auto inner = run_lesson(a, "02-locality/solution.fsa");
  auto outer = run_lesson(a, "03-outer-product/solution.fsa");
  if (!a.brief) {
    side_by_side(inner, outer, "Inner product, 3 registers", "Outer product, 6 registers");
    cli::print_out("\n");
  }
  inner.reset();
  inner.run();
  outer.reset();
  outer.run();
  p1.reset();
  p1.run();
  cost_header();
  cost_row("c00 alone (Problem 1)", p1);
  cost_row("2x2 inner product (Problem 2)", inner);
  cost_row("2x2 outer product (Problem 3)", outer);

  cli::print_out("\n== Problems 4 and 5: softmax over n = %ld, 3 passes vs online ==\n\n", a.n);
  auto three = run_lesson(a, "05-safe-softmax/solution.fsa", a.n);
  auto online = run_lesson(a, "06-online-softmax/solution.fsa", a.n);
  three.run();
  online.run();
  cost_header();
  cost_row("safe softmax, 3 passes", three);
  cost_row("online softmax, 2 passes", online);
  cli::print_out("reads per element: %.0f vs %.0f; writes per element: %.0f vs %.0f\n",
                 static_cast<double>(three.counters().elem_reads) / static_cast<double>(a.n),
                 static_cast<double>(online.counters().elem_reads) / static_cast<double>(a.n),
                 static_cast<double>(three.counters().elem_writes) / static_cast<double>(a.n),
                 static_cast<double>(online.counters().elem_writes) / static_cast<double>(a.n));

  cli::print_out("\n== Element is tile: attention forward at N = 4096, d = 64, 64x64 tiles, bf16 ==\n\n");
  traffic::AttentionParams ap;
  ap.n = 4096;
  ap.d = 64;
  cli::print_out("%-10s %14s %14s %14s\n", "schedule", "HBM read MiB", "HBM write MiB", "total MiB");
  for (auto [name, s] : {std::pair{"naive", traffic::AttentionForward::Naive}, std::pair{"FA1", traffic::AttentionForward::FA1},
                         std::pair{"FA2", traffic::AttentionForward::FA2}}) {
    auto t = traffic::count_attention_forward(ap, s);
    cli::print_out("%-10s %14.2f %14.2f %14.2f\n", name, mib(t.bytes_read()), mib(t.bytes_written()),
                   mib(t.bytes_read() + t.bytes_written()));
  }
  cli::print_out("\nNext: lessons/README.md (exercises), `flashsim lesson list`, `flashsim-viewer`.\n");
  return cli::kExitOk;
}

}  // namespace

void register_tour_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<TourArgs>();
  CLI::App* tour = app.add_subcommand("tour", "Run the lesson traces and print their tables and costs side by side");
  tour->add_option("--lessons", args->lessons_dir, "Folder that holds the lessons")->check(CLI::ExistingDirectory);
  tour->add_option("--n", args->n, "Softmax length")->check(CLI::Range(1, 1000000));
  tour->add_flag("--brief", args->brief, "Skip the side-by-side step tables");
  tour->callback([args, &exit_code] { exit_code = cli::guarded([&] { return do_tour(*args); }); });
}

}  // namespace flashsim::lessons
