// The CLI end to end: gen writes a trace that run executes and counts; traffic prints the bytes.
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <sys/wait.h>

#include "tests/scratch_dir.h"

namespace {
using flashsim::test::ScratchDir;

std::string run_cmd(const std::string& cmd, int& rc) {
  ScratchDir tmp;
  std::string out_file = tmp.path("out.txt");
  const int status = std::system((cmd + " > " + out_file + " 2>&1").c_str());
  rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream f(out_file);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}
}  // namespace

TEST_CASE("flashsim gen attention writes a trace that flashsim run executes and counts", "[tile][cli]") {
  const std::string bin = FLASHSIM_BINARY;
  ScratchDir tmp;
  const std::string trace = tmp.path("fa2.fsa"), svg_path = tmp.path("sweep.svg");
  int rc = 0;
  run_cmd(bin + " gen attention --schedule fa2 --n 1024 --d 64 --br 64 --bc 64 -o " + trace, rc);
  REQUIRE(rc == 0);
  std::string out = run_cmd(bin + " run " + trace + " --no-table", rc);
  CHECK(rc == 0);
  CHECK(out.find("(4325376 bytes)") != std::string::npos);  // Q once + K, V once per Q block
  out = run_cmd(bin + " traffic attention --schedule all --n 1024 --d 64 --no-arrays", rc);
  CHECK(rc == 0);
  CHECK(out.find("4325376") != std::string::npos);
  CHECK(out.find("2228224") != std::string::npos);  // FA1 writes
  out = run_cmd(bin + " traffic attention --schedule fa2 --n 0", rc);
  CHECK(rc != 0);
  out = run_cmd(bin + " sweep --n 256 --d 16 --m-min 4096 --m-max 16384 --svg " + svg_path, rc);
  CHECK(rc == 0);
  std::ifstream svg(svg_path);
  std::stringstream s;
  s << svg.rdbuf();
  CHECK(s.str().find("<svg") == 0);
  CHECK(s.str().find("FA2") != std::string::npos);
}

TEST_CASE("flashsim sweep --vary l2: predictions per L2 size, measured rows from a compare CSV", "[tile][cli][l2]") {
  const std::string bin = FLASHSIM_BINARY;
  ScratchDir tmp;
  const std::string csv = tmp.path("compare.csv"), svg_path = tmp.path("l2.svg");
  // The columns the sweep reads, as flashsim-gpu compare writes them; one FA2 row at the sweep's size.
  std::ofstream(csv) << "schedule,size,dtype,hbm_read,hbm_written,blocks_per_sm\n"
                        "attn-fa2,\"4x1024x64\",bf16,1600000,540000,3\n"
                        "attn-fa2,\"8x1024x64\",bf16,1,1,3\n";
  int rc = 0;
  std::string out = run_cmd(bin + " sweep --vary l2 --heads 4 --n 1024 --d 64 --l2-min 1MiB --l2-max 4MiB --measured GPU:2MiB:" +
                                csv + " --svg " + svg_path,
                            rc);
  INFO(out);
  CHECK(rc == 0);
  // FA2 through any of these L2s moves the compulsory bytes: Q, K, V once (3 x 4 x 1024 x 64 x 2)
  // and O once (4 x 1024 x 64 x 2) plus L (4 x 1024 x 4) = 1572864 + 540672
  CHECK(out.find("FA2: 3 blocks per SM (from the measured rows") != std::string::npos);
  CHECK(out.find("2113536") != std::string::npos);
  CHECK(out.find("measured on GPU (L2 2.00 MiB):  FA2 2140000 (measured/predicted 1.013)") != std::string::npos);
  std::ifstream svg(svg_path);
  std::stringstream s;
  s << svg.rdbuf();
  CHECK(s.str().find("GPU FA2 measured") != std::string::npos);
  for (const std::string& bad : std::vector<std::string>{"--measured GPU:2MiB:/nonexistent.csv", "--measured GPU:" + csv, "--measured GPU:2x:" + csv,
                                "--l2-min 0", "--l2-min 8MiB --l2-max 1MiB", "--measured GPU:2MiB:" + svg_path}) {
    out = run_cmd(bin + " sweep --vary l2 --heads 2 --n 128 --d 16 " + bad, rc);
    INFO(bad << ": " << out);
    CHECK(rc == 2);
  }
}

TEST_CASE("flashsim traffic --l2-ways/--l2-dirty-ways: sets and a dirty limit, and their bad values", "[tile][cli][l2]") {
  const std::string bin = FLASHSIM_BINARY;
  int rc = 0;
  // 4 heads of K/V (1 MiB) in an 8 MiB L2 of 8-way sets: the FA2 reads still fit (each input once)
  std::string out = run_cmd(bin + " traffic attention --schedule fa2 --n 1024 --d 64 --heads 4 --l2 8MiB --sms 4 "
                                  "--l2-ways 8 --l2-dirty-ways 4",
                            rc);
  CHECK(rc == 0);
  CHECK(out.find("sets of 8 ways") != std::string::npos);
  CHECK(out.find("at most 4 dirty lines a set") != std::string::npos);
  CHECK(out.find("1572864") != std::string::npos);  // Q, K, V read from HBM once: 3 x 4 x 1024 x 64 x 2
  out = run_cmd(bin + " traffic attention --schedule fa2 --n 1024 --d 64 --l2 1KiB --l2-ways 16", rc);
  CHECK(rc != 0);
  CHECK(out.find("ways") != std::string::npos);
  out = run_cmd(bin + " traffic attention --schedule fa2 --n 1024 --d 64 --l2 8MiB --l2-ways 8 --l2-dirty-ways 9", rc);
  CHECK(rc != 0);
  CHECK(out.find("dirty") != std::string::npos);
  // Page-balanced sets and low-rank far copies: described, and the same compulsory reads where all fits.
  out = run_cmd(bin + " traffic attention --schedule fa2 --n 1024 --d 64 --heads 4 --l2 8MiB --sms 4 --l2-partitions 2 "
                      "--l2-ways 8 --l2-page-lines 16384 --l2-copy-rank 5",
                rc);
  CHECK(rc == 0);
  CHECK(out.find("sets even within pages of 16384 lines") != std::string::npos);
  CHECK(out.find("far copies entering 5 lines above") != std::string::npos);
  CHECK(out.find("1572864") != std::string::npos);
  out = run_cmd(bin + " traffic attention --schedule fa2 --n 1024 --d 64 --l2 8MiB --l2-ways 8 --l2-copy-rank 9", rc);
  CHECK(rc != 0);
  CHECK(out.find("copy rank") != std::string::npos);
  // A dirty limit shared by groups of sets: described, the same compulsory reads; 0 sets is refused.
  out = run_cmd(bin + " traffic attention --schedule fa2 --n 1024 --d 64 --heads 4 --l2 8MiB --sms 4 "
                      "--l2-ways 8 --l2-dirty-ways 4 --l2-dirty-group 4",
                rc);
  CHECK(rc == 0);
  CHECK(out.find("at most 4 dirty lines a set over groups of 4 sets") != std::string::npos);
  CHECK(out.find("1572864") != std::string::npos);
  out = run_cmd(bin + " traffic attention --schedule fa2 --n 1024 --d 64 --l2 8MiB --l2-ways 8 --l2-dirty-ways 4 --l2-dirty-group 0", rc);
  CHECK(rc == 2);
  CHECK(out.find("--l2-dirty-group") != std::string::npos);
}

TEST_CASE("flashsim traffic attention --paired-tiles: the fast d = 128 kernel's block order", "[tile][cli][l2]") {
  // tests/tile/test_l2.cpp derives these: one SM, a 33 KiB LRU, causal n = 256 in 64 x 64 tiles;
  // paired, tile 2 re-reads K_0 right after tile 0 did (8 KiB of K hit, HBM 73728 of 81920 bytes)
  const std::string bin = FLASHSIM_BINARY;
  const std::string base = bin + " traffic attention --schedule fa2 --n 256 --d 64 --br 64 --bc 64 --causal "
                                 "--heavy-first --l2 33KiB --sms 1";
  int rc = 0;
  std::string out = run_cmd(base, rc);
  CHECK(rc == 0);
  CHECK(out.find("73728") == std::string::npos);
  out = run_cmd(base + " --paired-tiles", rc);
  CHECK(rc == 0);
  CHECK(out.find("73728") != std::string::npos);
}

TEST_CASE("flashsim traffic attention --split-tail-sms: the split parts' scratch round trip, and its range", "[tile][cli]") {
  // test_tile_traffic derives these: 16 Q tiles on 3 SMs, the last one in 3 parts, each writing a
  // 64 x 64 fp32 partial O (16 KiB) and 64 fp32 logsumexps that the merge reads back
  const std::string bin = FLASHSIM_BINARY;
  const std::string base = bin + " traffic attention --schedule fa2 --n 1024 --d 64 --br 64 --bc 64";
  int rc = 0;
  std::string out = run_cmd(base, rc);
  CHECK(rc == 0);
  CHECK(out.find("Opart") == std::string::npos);
  out = run_cmd(base + " --split-tail-sms 3", rc);
  CHECK(rc == 0);
  CHECK(out.find("Opart                        49152           49152") != std::string::npos);
  CHECK(out.find("Lpart                          768             768") != std::string::npos);
  out = run_cmd(base + " --split-tail-sms 161", rc);
  CHECK(rc == 2);
  CHECK(out.find("--split-tail-sms: Value 161 not in range 0 to 160") != std::string::npos);
}
