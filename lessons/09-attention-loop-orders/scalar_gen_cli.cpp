#include "lessons/09-attention-loop-orders/scalar_gen_cli.h"

#include <CLI/CLI.hpp>
#include <fstream>
#include <iostream>

#include "sim/cli.h"
#include "sim/schedules/attention_scalar.h"
#include "sim/schedules/softmax.h"

namespace flashsim::lessons {
namespace {

struct ScalarGenArgs {
  std::string variant;
  std::int64_t n = 8, d = 2, nq = -1, slots = 0;
  std::string order = "inner", output;
  bool compare = false;
};

int emit(const std::string& text, const std::string& path) {
  if (path.empty() || path == "-") {
    std::cout << text;
    return cli::kExitOk;
  }
  std::ofstream f(path);
  if (!f) throw std::invalid_argument("cannot write '" + path + "'");
  f << text;
  std::cerr << "wrote " << path << "\n";
  return cli::kExitOk;
}

CLI::App* gen_command(CLI::App& app) {
  for (CLI::App* sub : app.get_subcommands({}))
    if (sub->get_name() == "gen") return sub;
  CLI::App* gen = app.add_subcommand("gen", "Generate traces for larger problems");
  gen->require_subcommand(1);
  return gen;
}

}  // namespace

void register_scalar_gen_commands(CLI::App& app, int& exit_code) {
  CLI::App* gen = gen_command(app);
  auto a = std::make_shared<ScalarGenArgs>();

  CLI::App* sm = gen->add_subcommand("softmax", "Softmax of x[0..n): unsafe, 3pass (3 registers) or online (4)");
  sm->add_option("--variant", a->variant, "unsafe, 3pass, online (default) or ratio (online, rescaled by e^m_old/e^m_new)")
      ->check(CLI::IsMember({"unsafe", "3pass", "online", "ratio"}));
  sm->add_option("--n", a->n, "Length of x")->check(CLI::Range(1, 10'000'000));
  sm->add_option("-o,--output", a->output, "Write the trace here (default: stdout)");
  sm->add_flag("--compare", a->compare, "Print the counted cost table of the three versions instead");
  sm->callback([a, &exit_code] {
    exit_code = cli::guarded([&] {
      if (a->compare) return emit(sim::schedules::softmax_cost_table(a->n), "");
      std::string v = a->variant.empty() ? "online" : a->variant;
      return emit(sim::schedules::scalar_schedule_source(v == "ratio" ? "softmax-online-ratio" : "softmax-" + v,
                                                         {{"n", a->n}}),
                  a->output);
    });
  });

  CLI::App* var = gen->add_subcommand("variance", "Variance of x[0..n): welford (one pass), two-pass or naive");
  var->add_option("--variant", a->variant, "welford (default), two-pass or naive")
      ->check(CLI::IsMember({"welford", "two-pass", "naive"}));
  var->add_option("--n", a->n, "Length of x")->check(CLI::Range(1, 10'000'000));
  var->add_option("-o,--output", a->output, "Write the trace here (default: stdout)");
  var->callback([a, &exit_code] {
    exit_code = cli::guarded([&] {
      return emit(sim::schedules::scalar_schedule_source("variance-" + (a->variant.empty() ? "welford" : a->variant),
                                                         {{"n", a->n}}),
                  a->output);
    });
  });

  CLI::App* at = gen->add_subcommand("attention-scalar",
                                     "Attention o = softmax(q K^T) V on the scalar machine, either loop order");
  at->add_option("--order", a->order, "inner (outer loop over queries) or outer (outer loop over keys/values)")
      ->check(CLI::IsMember({"inner", "outer"}));
  at->add_option("--n", a->n, "Keys/values (and queries unless --nq)")->check(CLI::Range(1, 1'000'000));
  at->add_option("--d", a->d, "Head dimension")->check(CLI::Range(1, 4096));
  at->add_option("--nq", a->nq, "Queries (default n)")->check(CLI::Range(1, 1'000'000));
  at->add_option("--slots", a->slots, "outer: queries whose state stays in registers (0..nq)")->check(CLI::Range(0, 1'000'000));
  at->add_option("-o,--output", a->output, "Write the trace here (default: stdout)");
  at->add_flag("--table", a->compare, "Print the counted q/K/V/o traffic of both orders instead");
  at->callback([a, &exit_code] {
    exit_code = cli::guarded([&] {
      if (a->compare) return emit(sim::schedules::attention_traffic_table(a->n, a->d), "");
      std::map<std::string, std::int64_t> p{{"n", a->n}, {"d", a->d}, {"slots", a->slots}};
      if (a->nq > 0) p["nq"] = a->nq;
      return emit(sim::schedules::scalar_schedule_source("attention-" + a->order, p), a->output);
    });
  });
}

}  // namespace flashsim::lessons
