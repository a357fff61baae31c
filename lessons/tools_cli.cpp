// `flashsim gen matmul` (schedule generators) and `flashsim optimize matmul|softmax` (exhaustive
// search).
#include <CLI/CLI.hpp>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <optional>
#include <sstream>

#include "isa/assembler.h"
#include "lessons/lesson_cli.h"
#include "sim/cli.h"
#include "sim/machine.h"
#include "sim/optimize.h"
#include "sim/optimize_softmax.h"
#include "sim/schedules/matmul.h"
#include "sim/schedules/softmax.h"

namespace flashsim::lessons {
namespace {

using sim::schedules::MatmulSchedule;

struct GenArgs {
  std::vector<int> n{2}, regs{3};
  int m = 0, k = 0;
  std::string schedule = "inner", block, output;
  int resident = 0;
  bool table = false;
};

void write_text(const std::string& path, const std::string& text) {
  if (path.empty() || path == "-") {
    std::cout << text;
    return;
  }
  std::ofstream f(path);
  if (!f) throw std::invalid_argument("cannot write '" + path + "'");
  f << text;
}

void print_gen_table(const GenArgs& a) {
  std::cout << "C = A x B (n x n times n x n) on R registers: cycles / LOADs per schedule\n";
  std::cout << "(compulsory LOADs: every element of A and B read once = 2n^2; outer spills the partial\n"
               " sums that do not fit, blocked keeps a register block of C)\n\n";
  std::cout << std::setw(4) << "n" << std::setw(5) << "R" << " | " << std::setw(17) << "inner" << " | "
            << std::setw(17) << "outer" << " | " << std::setw(17) << "blocked" << " | " << std::setw(7) << "block"
            << " | compulsory\n";
  for (int n : a.n)
    for (int r : a.regs) {
      std::cout << std::setw(4) << n << std::setw(5) << r << " | ";
      std::string block;
      for (auto s : {MatmulSchedule::Inner, MatmulSchedule::Outer, MatmulSchedule::Blocked}) {
        sim::schedules::MatmulGenOptions o;
        o.m = a.m ? a.m : n;
        o.k = a.k ? a.k : n;
        o.n = n;
        o.regs = r;
        o.schedule = s;
        auto g = sim::schedules::generate_matmul(o);
        std::ostringstream cell;
        cell << g.cycles << " / " << g.loads;
        std::cout << std::setw(17) << cell.str() << " | ";
        if (s == MatmulSchedule::Blocked) block = std::to_string(g.block_rows) + "x" + std::to_string(g.block_cols);
      }
      std::cout << std::setw(7) << block << " | " << sim::schedules::compulsory_loads(a.m ? a.m : n, a.k ? a.k : n, n) << "\n";
    }
}

int do_gen(const GenArgs& a) {
  auto sched = sim::schedules::parse_matmul_schedule(a.schedule);
  if (!sched) throw std::invalid_argument("--schedule is inner, outer or blocked, not '" + a.schedule + "'");
  if (a.table) {
    print_gen_table(a);
    return cli::kExitOk;
  }
  if (a.n.size() != 1 || a.regs.size() != 1) throw std::invalid_argument("give one --n and one --regs (lists need --table)");
  sim::schedules::MatmulGenOptions o;
  o.n = a.n[0];
  o.m = a.m ? a.m : o.n;
  o.k = a.k ? a.k : o.n;
  o.regs = a.regs[0];
  o.schedule = *sched;
  o.resident = a.resident;
  if (!a.block.empty()) {
    auto x = a.block.find('x');
    try {
      if (x == std::string::npos) throw std::invalid_argument(a.block);
      o.block_rows = std::stoi(a.block.substr(0, x));
      o.block_cols = std::stoi(a.block.substr(x + 1));
      if (o.block_rows < 1 || o.block_cols < 1) throw std::invalid_argument(a.block);
    } catch (const std::exception&) {
      throw std::invalid_argument("--block is ROWSxCOLS, e.g. 2x3, not '" + a.block + "'");
    }
  }
  auto g = sim::schedules::generate_matmul(o);
  write_text(a.output, g.text);
  (a.output.empty() || a.output == "-" ? std::cerr : std::cout) << g.summary << "\n";
  return cli::kExitOk;
}

// ---- optimize: the exhaustive searches, with a time limit --------------------------------

// A schedule a generator knows, run on the machine with the search's costs: what a search that
// its time limit stopped can still offer, next to the bound it proved.
struct KnownSchedule {
  std::string name, trace;
  isa::Program program;
  sim::Counters counts;
  std::vector<int> x_reads;  // softmax: LOADs of each x[i]
};

std::optional<KnownSchedule> run_known(const std::string& name, const std::string& text, int regs,
                                       const std::array<std::uint32_t, isa::kOpcodeCount>& cycles) {
  try {
    KnownSchedule k{name, text, isa::assemble(text, name), {}, {}};
    if (k.program.register_count() > regs) return std::nullopt;
    sim::MachineOptions mo;
    mo.regs = regs;
    mo.history = false;
    for (std::size_t op = 0; op < isa::kOpcodeCount; ++op) mo.costs[static_cast<isa::Opcode>(op)] = cycles[op];
    sim::Machine m(k.program, mo);
    m.run();
    k.counts = m.counters();
    if (auto x = k.program.find_array("x"))
      for (auto r : m.array(*x).tile_reads) k.x_reads.push_back(static_cast<int>(r));
    return k;
  } catch (const std::exception&) {
    return std::nullopt;  // the generator needs more registers than the search has
  }
}

std::optional<KnownSchedule> best_known(std::vector<std::optional<KnownSchedule>> all, bool by_loads) {
  std::optional<KnownSchedule> best;
  auto key = [&](const KnownSchedule& k) {
    auto c = k.counts.cycles, l = k.counts.count(isa::Opcode::LOAD);
    return by_loads ? std::pair{l, c} : std::pair{c, l};
  };
  for (auto& k : all)
    if (k && (!best || key(*k) < key(*best))) best = std::move(k);
  return best;
}

std::optional<KnownSchedule> best_known_matmul(const sim::MatmulSearch& p) {
  std::vector<std::optional<KnownSchedule>> all;
  for (auto s : {MatmulSchedule::Inner, MatmulSchedule::Outer, MatmulSchedule::Blocked}) {
    sim::schedules::MatmulGenOptions o;
    o.m = p.m;
    o.k = p.k;
    o.n = p.n;
    o.regs = p.regs;
    o.schedule = s;
    try {
      auto g = sim::schedules::generate_matmul(o);
      all.push_back(run_known(std::string(sim::schedules::matmul_schedule_name(s)) + " product", g.text, p.regs, p.cycles));
    } catch (const std::invalid_argument&) {
    }
  }
  return best_known(std::move(all), false);
}

std::optional<KnownSchedule> best_known_softmax(const sim::SoftmaxSearch& p) {
  std::vector<std::optional<KnownSchedule>> all;
  all.push_back(run_known("three-pass softmax", sim::schedules::softmax_three_pass_source(p.n), p.regs, p.cycles));
  if (p.allow_rescale)
    all.push_back(run_known("online softmax", sim::schedules::online_softmax_source(p.n), p.regs, p.cycles));
  return best_known(std::move(all), p.objective == sim::SoftmaxSearch::Objective::Loads);
}

// Progress of a long search on stderr, about once a second.
sim::SearchLimits search_limits(double time_limit, bool quiet, const std::string& what) {
  sim::SearchLimits l;
  l.time_limit_seconds = time_limit;
  if (!quiet)
    l.report = [what](const sim::SearchProgress& p) {
      std::cerr << "flashsim optimize " << what << ": " << p.stored << " states (" << p.expanded << " expanded), "
                << std::fixed << std::setprecision(1) << p.seconds << " s, lower bound " << p.bound << " "
                << p.bound_unit << std::defaultfloat << "\n";
    };
  return l;
}

std::string timeout_note(const sim::SearchStopped& t, const std::optional<KnownSchedule>& known) {
  std::ostringstream os;
  os << "      NOT PROVEN OPTIMAL: the " << (t.timed_out ? "time limit" : "state limit (--max-states)")
     << " stopped the search after " << std::fixed << std::setprecision(1) << t.at.seconds << " s; proven lower bound " << t.at.bound << " " << t.at.bound_unit << "; ";
  if (known) {
    os << "the row is the best schedule known (" << known->name << ")";
    const auto c = known->counts;
    const auto got = std::string(t.at.bound_unit) == "LOADs" ? c.count(isa::Opcode::LOAD) : c.cycles;
    if (got == t.at.bound) os << ", whose " << t.at.bound_unit << " meet the bound: that many is optimal";
    os << "\n";
  } else {
    os << "no schedule is known on this many registers\n";
  }
  return os.str();
}

struct OptArgs {
  int n = 2, m = 0, k = 0;
  std::vector<int> regs{3};
  std::vector<std::string> costs;
  std::string output;
  bool no_symmetry = false, no_spills = false, quiet = false;
  std::uint64_t max_states = 60'000'000;
  double time_limit = 0;
};

void parse_costs(const std::vector<std::string>& costs, std::array<std::uint32_t, isa::kOpcodeCount>& cycles) {
  for (const auto& c : costs) {
    auto eq = c.find('=');
    auto op = eq == std::string::npos ? std::nullopt : isa::find_mnemonic(c.substr(0, eq));
    if (!op) throw std::invalid_argument("--cost expects OP=CYCLES, e.g. LOAD=100, not '" + c + "'");
    try {
      long long v = std::stoll(c.substr(eq + 1));
      if (v < 0 || v > 1'000'000) throw std::out_of_range(c);
      cycles[static_cast<std::size_t>(*op)] = static_cast<std::uint32_t>(v);
    } catch (const std::exception&) {
      throw std::invalid_argument("--cost " + c + ": not a cycle count");
    }
  }
}

int do_optimize(const OptArgs& a) {
  sim::MatmulSearch p;
  p.n = a.n;
  p.m = a.m ? a.m : a.n;
  p.k = a.k ? a.k : a.n;
  p.use_symmetry = !a.no_symmetry;
  p.allow_spills = !a.no_spills;
  p.max_states = a.max_states;
  parse_costs(a.costs, p.cycles);
  std::cout << "Optimal schedules for C = A x B (" << p.m << "x" << p.k << " times " << p.k << "x" << p.n
            << "), every program over LOAD / MAC_Z / MAC / STORE\n";
  std::cout << std::setw(5) << "regs" << std::setw(8) << "cycles" << std::setw(7) << "LOADs" << std::setw(6) << "MACs"
            << std::setw(8) << "STOREs" << std::setw(14) << "start bound" << std::setw(12) << "states"
            << std::setw(10) << "seconds\n" << std::flush;
  std::string last_trace, last_label = "One optimal trace";
  int symmetries = 0;  // from a search that finished
  bool all_proven = true;
  for (int r : a.regs) {
    p.regs = r;
    p.limits = search_limits(a.time_limit, a.quiet, std::to_string(p.m) + "x" + std::to_string(p.k) + "x" +
                                                        std::to_string(p.n) + " on " + std::to_string(r) + " registers");
    try {
      auto res = sim::optimize_matmul(p);
      std::cout << std::setw(5) << r << std::setw(8) << res.cycles << std::setw(7) << res.loads << std::setw(6) << res.macs
                << std::setw(8) << res.stores << std::setw(14) << (std::to_string(res.start_bound_cycles) + " cyc")
                << std::setw(12) << res.stats.stored << std::setw(9) << std::fixed << std::setprecision(2)
                << res.stats.seconds << std::defaultfloat << "\n";
      last_trace = res.trace;
      last_label = "One optimal trace";
      symmetries = res.stats.symmetries;
    } catch (const sim::SearchStopped& t) {
      all_proven = false;
      auto known = best_known_matmul(p);
      const auto& c = known ? known->counts : sim::Counters{};
      std::cout << std::setw(5) << r << std::setw(8) << (known ? std::to_string(c.cycles) : "-") << std::setw(7)
                << (known ? std::to_string(c.count(isa::Opcode::LOAD)) : "-") << std::setw(6)
                << (known ? std::to_string(c.count(isa::Opcode::MAC) + c.count(isa::Opcode::MAC_Z)) : "-")
                << std::setw(8) << (known ? std::to_string(c.count(isa::Opcode::STORE)) : "-") << std::setw(14) << "-"
                << std::setw(12) << t.at.stored << std::setw(9) << std::fixed << std::setprecision(2) << t.at.seconds
                << std::defaultfloat << "\n"
                << timeout_note(t, known);
      last_trace = known ? "# NOT PROVEN OPTIMAL: the best schedule known (" + known->name +
                               "); the search proved no program takes fewer than " + std::to_string(t.at.bound) +
                               " cycles before it stopped.\n" + known->trace
                         : "";
      last_label = "The best schedule known (not proven optimal)";
    }
    std::cout << std::flush;
  }
  std::cout << "\nThe start bound counts each operand loaded once, every MAC and every STORE; the search\n"
               "visits every program (up to register renaming and the product's "
            << (!p.use_symmetry ? std::string("identity only")
                                : symmetries ? std::to_string(symmetries) + " symmetries" : std::string("symmetries"))
            << "), so no program on that many registers beats the cycles shown"
            << (all_proven ? "" : " (rows marked NOT PROVEN OPTIMAL excepted)") << ".\n";
  if (last_trace.empty()) return cli::kExitOk;
  if (a.regs.size() == 1) {
    if (a.output.empty()) std::cout << "\n" << last_label << ":\n" << last_trace;
    else {
      write_text(a.output, last_trace);
      std::cout << "\n" << last_label << " written to " << a.output << " (run it: flashsim run " << a.output << ")\n";
    }
  } else if (!a.output.empty()) {
    write_text(a.output, last_trace);
    std::cout << "\nThe trace for " << a.regs.back() << " registers written to " << a.output << "\n";
  }
  return cli::kExitOk;
}

struct SoftmaxOptArgs {
  int n = 3;
  std::vector<int> regs{3};
  std::vector<std::string> costs;
  std::string output, objective = "cycles";
  bool no_symmetry = false, spills = false, no_rescale = false, quiet = false;
  std::uint64_t max_states = 30'000'000;
  double time_limit = 0;
};

int do_optimize_softmax(const SoftmaxOptArgs& a) {
  sim::SoftmaxSearch p;
  p.n = a.n;
  p.allow_spills = a.spills;
  p.allow_rescale = !a.no_rescale;
  p.use_symmetry = !a.no_symmetry;
  p.max_states = a.max_states;
  if (a.objective == "cycles") p.objective = sim::SoftmaxSearch::Objective::Cycles;
  else if (a.objective == "loads") p.objective = sim::SoftmaxSearch::Objective::Loads;
  else throw std::invalid_argument("--objective is cycles or loads, not '" + a.objective + "'");
  parse_costs(a.costs, p.cycles);
  const bool by_loads = p.objective == sim::SoftmaxSearch::Objective::Loads;
  std::cout << "Optimal schedules for the safe softmax of n = " << p.n << " (minimum "
            << (by_loads ? "LOADs, then cycles" : "cycles, then LOADs") << "), every program over LOAD STORE MAX SUB\n"
            << "EXP ADD " << (p.allow_rescale ? "MUL " : "") << "DIV MOV on symbolic values"
            << (p.allow_spills ? ", spills to out allowed" : ", no spills") << (p.allow_rescale ? "" : ", no rescale") << "\n";
  std::cout << std::setw(5) << "regs" << std::setw(8) << "cycles" << std::setw(7) << "LOADs" << std::setw(11) << "x reads"
            << std::setw(8) << "spills" << std::setw(6) << "MULs" << std::setw(14) << "start bound" << std::setw(11)
            << "states" << std::setw(10) << "seconds" << "\n" << std::flush;
  std::string last_trace, last_label = "One optimal trace";
  int symmetries = 0;  // from a search that finished
  sim::SoftmaxVerification check;
  bool found = false, all_proven = true;
  auto per_x = [](const std::vector<int>& reads) {
    std::string s;
    for (int c : reads) s += (s.empty() ? "" : "+") + std::to_string(c);
    return s;
  };
  for (int r : a.regs) {
    p.regs = r;
    p.limits = search_limits(a.time_limit, a.quiet, "softmax n=" + std::to_string(p.n) + " on " + std::to_string(r) + " registers");
    sim::SoftmaxSchedule res;
    try {
      res = sim::optimize_softmax(p);
    } catch (const sim::NoProgramError& e) {
      if (a.regs.size() == 1) throw;  // the caller prints it and exits 2
      std::cout << std::setw(5) << r << "  no program: the search exhausted all " << e.states << " reachable states\n";
      continue;
    } catch (const sim::SearchStopped& t) {
      all_proven = false;
      auto known = best_known_softmax(p);
      const auto& c = known ? known->counts : sim::Counters{};
      std::cout << std::setw(5) << r << std::setw(8) << (known ? std::to_string(c.cycles) : "-") << std::setw(7)
                << (known ? std::to_string(c.count(isa::Opcode::LOAD)) : "-") << std::setw(11)
                << (known ? per_x(known->x_reads) : "-") << std::setw(8) << (known ? "0" : "-") << std::setw(6)
                << (known ? std::to_string(c.count(isa::Opcode::MUL)) : "-") << std::setw(14) << "-" << std::setw(11)
                << t.at.stored << std::setw(9) << std::fixed << std::setprecision(2) << t.at.seconds << std::defaultfloat
                << "\n"
                << timeout_note(t, known) << std::flush;
      if (!known) continue;
      found = true;
      check = sim::verify_softmax_trace(known->program, p.n);
      last_trace = "# NOT PROVEN OPTIMAL: the best schedule known (" + known->name +
                   "); the search proved no program takes fewer than " + std::to_string(t.at.bound) + " " +
                   t.at.bound_unit + " before it stopped.\n" + known->trace;
      last_label = "The best schedule known (not proven optimal)";
      continue;
    }
    found = true;
    check = sim::verify_softmax_trace(res.program, p.n);
    if (check.reads != res.loads)
      throw sim::SearchError("internal error: the machine counted " + std::to_string(check.reads) + " reads, the search " +
                             std::to_string(res.loads));
    std::ostringstream bound;
    bound << (by_loads ? res.start_bound_loads : res.start_bound_cycles) << (by_loads ? " LOADs" : " cyc");
    std::cout << std::setw(5) << r << std::setw(8) << res.cycles << std::setw(7) << res.loads << std::setw(11)
              << per_x(res.x_reads) << std::setw(8) << res.spill_stores << std::setw(6)
              << res.per_op[static_cast<std::size_t>(isa::Opcode::MUL)] << std::setw(14) << bound.str() << std::setw(11)
              << res.stats.stored << std::setw(9) << std::fixed << std::setprecision(2) << res.stats.seconds
              << std::defaultfloat << "\n" << std::flush;
    last_trace = res.trace;
    last_label = "One optimal trace";
    symmetries = res.stats.symmetries;
  }
  if (!found) throw sim::SearchError("no register count in the list admits a program");
  std::cout << "\nx reads: LOADs of each x[i]; spills: values stored to an out cell and loaded back; MULs:\n"
               "rescales by e^(m_old - m_new), the online-softmax update. The search visits every program in\n"
               "its value model (up to register renaming and "
            << (!p.use_symmetry ? std::string("no symmetry")
                                : symmetries ? std::to_string(symmetries) + " index permutations" : std::string("index permutations"))
            << "), so none beats the minimum shown" << (all_proven ? "" : " (rows marked NOT PROVEN OPTIMAL excepted)")
            << ".\n";
  std::cout << "Verified: the " << (a.regs.size() == 1 ? "" : "last ") << "trace ran " << check.trials
            << " times (float64 and float32, large and tied inputs); max relative error " << std::scientific
            << std::setprecision(1) << check.max_rel_error << std::defaultfloat << " against a float64 softmax.\n";
  if (a.output.empty()) {
    if (a.regs.size() == 1) std::cout << "\n" << last_label << ":\n" << last_trace;
  } else {
    write_text(a.output, last_trace);
    std::cout << "\nThe trace for " << a.regs.back() << " registers written to " << a.output << " (run it: flashsim run "
              << a.output << " --symbolic)\n";
  }
  return cli::kExitOk;
}

}  // namespace

void register_gen_command(CLI::App& app, int& exit_code) {
  CLI::App* gen = app.add_subcommand("gen", "Generate traces for larger problems");
  gen->require_subcommand(1);
  auto a = std::make_shared<GenArgs>();
  CLI::App* mm = gen->add_subcommand("matmul", "C = A x B on R registers: inner, outer or blocked schedule");
  mm->add_option("--n", a->n, "Size n (n x n product; with --m/--k the columns of B); a list with --table")->delimiter(',');
  mm->add_option("--m", a->m, "Rows of A (default n)");
  mm->add_option("--k", a->k, "Columns of A = rows of B (default n)");
  mm->add_option("--regs", a->regs, "Registers; a list with --table")->delimiter(',');
  mm->add_option("--schedule", a->schedule, "inner, outer or blocked");
  mm->add_option("--block", a->block, "blocked: block shape ROWSxCOLS (default: the best that fits)");
  mm->add_option("--resident", a->resident, "outer: partial sums kept in registers (default: the best count)");
  mm->add_option("-o,--output", a->output, "Write the trace here (default: stdout)");
  mm->add_flag("--table", a->table, "Print cycles / LOADs of every schedule over the --n and --regs lists");
  mm->callback([a, &exit_code] { exit_code = cli::guarded([&] { return do_gen(*a); }); });
}

// Measured with this build on the 2-core AMD EPYC dev machine, one core, 2026-11-24.
constexpr const char* kMatmulSizes =
    "How long a search takes (MxKxN = --m x --k x --n; 2-core AMD EPYC dev machine, one core):\n"
    "  2x2x2 (--n 2), 3-6 registers      under 0.1 s\n"
    "  2x3x2, 3x2x2, 2x2x3               3 registers 2-3 s; 4-6 registers under 1 s\n"
    "  2x2x4, 4x2x2                      3 registers over 30 s; 4: 25 s; 5: 4 s; 6: 0.3 s\n"
    "  2x4x2                             3 and 5 registers over 30 s; 4: 27 s; 6: 3 s\n"
    "  3x3x2, 2x3x3                      6 registers 15-17 s; 3-5 registers over 30 s (3x3x2: over 100 s)\n"
    "  3x2x3                             over 30 s on 3-6 registers\n"
    "  3x3x3 (--n 3)                     over 60 s on 3-5 registers; 6 or more do not fit the search's state\n"
    "  4x4x4 (--n 4)                     refused: too large for an exhaustive search\n"
    "A search prints its progress (states, seconds, proven lower bound) on stderr once a second.\n"
    "--time-limit SECONDS stops it and prints the best schedule known (the inner, outer and blocked\n"
    "generators, run with the same costs) and the lower bound the search proved, marked NOT PROVEN OPTIMAL.";
constexpr const char* kSoftmaxSizes =
    "How long a search takes (2-core AMD EPYC dev machine, one core):\n"
    "  n <= 3                            under 0.1 s; with --spills, 3 registers about 6 s\n"
    "  n = 4, 3-6 registers              under 3 s (--objective loads, 4 registers: 7 s); 8 registers 14 s\n"
    "  n = 4, 2 registers                no program (proved at once, exit 2)\n"
    "  n = 4 --spills                    5 registers 2.5 s; 3 and 4 registers over 60 s\n"
    "A search prints its progress (states, seconds, proven lower bound) on stderr once a second.\n"
    "--time-limit SECONDS stops it and prints the best schedule known (the three-pass and online\n"
    "generators) and the lower bound the search proved, marked NOT PROVEN OPTIMAL.";

void register_optimize_command(CLI::App& app, int& exit_code) {
  CLI::App* opt = app.add_subcommand("optimize", "Find a provably optimal trace by exhaustive search");
  opt->require_subcommand(1);
  auto a = std::make_shared<OptArgs>();
  CLI::App* mm = opt->add_subcommand("matmul", "C = A x B: minimum cycles, then LOADs, on R registers");
  mm->add_option("--n", a->n, "Size n (n x n product)")->check(CLI::Range(1, 4));
  mm->add_option("--m", a->m, "Rows of A (default n)")->check(CLI::Range(1, 4));
  mm->add_option("--k", a->k, "Columns of A = rows of B (default n)")->check(CLI::Range(1, 4));
  mm->add_option("--regs", a->regs, "Registers (a list prints a table: --regs 3,4,5,6)")->delimiter(',')->check(CLI::Range(3, 16));
  mm->add_option("--cost", a->costs, "Cycle cost of an opcode, OP=C (e.g. LOAD=100)");
  mm->add_option("-o,--output", a->output, "Write the optimal trace here");
  mm->add_flag("--no-symmetry", a->no_symmetry, "Merge states under register renaming only");
  mm->add_flag("--no-spills", a->no_spills, "Forbid storing a partial sum and loading it back");
  mm->add_option("--max-states", a->max_states, "Stop after this many states (memory guard), as --time-limit does");
  mm->add_option("--time-limit", a->time_limit, "Stop after SECONDS; print the best schedule known and the proven lower bound")
      ->check(CLI::PositiveNumber);
  mm->add_flag("--quiet", a->quiet, "No progress lines on stderr");
  mm->footer(kMatmulSizes);
  auto sa = std::make_shared<SoftmaxOptArgs>();
  CLI::App* sm = opt->add_subcommand("softmax", "Safe softmax of n elements: minimum cycles (or LOADs) on R registers");
  sm->add_option("--n", sa->n, "Elements of x (1..4)")->check(CLI::Range(1, 4));
  sm->add_option("--regs", sa->regs, "Registers (a list prints a table: --regs 2,3,4)")->delimiter(',')->check(CLI::Range(1, 8));
  sm->add_option("--objective", sa->objective, "cycles (then LOADs) or loads (then cycles)");
  sm->add_option("--cost", sa->costs, "Cycle cost of an opcode, OP=C (e.g. LOAD=100)");
  sm->add_option("-o,--output", sa->output, "Write the optimal trace here");
  sm->add_flag("--spills", sa->spills, "Allow storing a value to an out cell not yet final and loading it back");
  sm->add_flag("--no-rescale", sa->no_rescale, "Forbid MUL by e^(m_old - m_new), i.e. the online form");
  sm->add_flag("--no-symmetry", sa->no_symmetry, "Merge states under register renaming only");
  sm->add_option("--max-states", sa->max_states, "Stop after this many states (memory guard), as --time-limit does");
  sm->add_option("--time-limit", sa->time_limit, "Stop after SECONDS; print the best schedule known and the proven lower bound")
      ->check(CLI::PositiveNumber);
  sm->add_flag("--quiet", sa->quiet, "No progress lines on stderr");
  sm->footer(kSoftmaxSizes);
  sm->callback([sa, &exit_code] {
    exit_code = cli::guarded([&] {
      try {
        return do_optimize_softmax(*sa);
      } catch (const sim::SearchError& e) {
        std::cerr << "flashsim: error: " << e.what() << "\n";
        return cli::kExitBadInput;
      }
    });
  });
  mm->callback([a, &exit_code] {
    exit_code = cli::guarded([&] {
      try {
        return do_optimize(*a);
      } catch (const sim::SearchError& e) {
        std::cerr << "flashsim: error: " << e.what() << "\n";
        return cli::kExitBadInput;
      }
    });
  });
}

}  // namespace flashsim::lessons
