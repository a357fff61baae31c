// Text -> Program. Every error is reported as FILE:LINE:COL: error: message.
#pragma once

#include <map>
#include <stdexcept>
#include <string>
#include <string_view>

#include "isa/program.h"

namespace flashsim::isa {

class AsmError : public std::runtime_error {
 public:
  AsmError(std::string file, std::uint32_t line, std::uint32_t col, std::string message);
  std::string file;
  std::uint32_t line, col;
  std::string message;  // without the location prefix
};

struct AssembleOptions {
  std::map<std::string, std::int64_t> params;  // overrides for .param defaults
  std::size_t max_instructions = 200'000'000;  // loop expansion guard
  // Loops whose bodies emit nothing never reach max_instructions, so iterations (of every loop,
  // nested ones included) are capped too; a real trace has about one iteration per instruction.
  std::size_t max_loop_iterations = 200'000'000;
  // A command-line override of a name the file never declares is a typo: with this set it is
  // an error (std::invalid_argument naming the declared parameters) instead of being ignored.
  bool require_declared_params = false;
};

Program assemble(std::string_view text, const std::string& file_name = "<input>",
                 const AssembleOptions& opts = {});
// Reads the file (rejecting binary content and over-long lines) and assembles it.
Program assemble_file(const std::string& path, const AssembleOptions& opts = {});
// The file's text, as assemble_file reads it: AsmError (line 0) for a directory or a file that
// cannot be opened.
std::string read_trace_file(const std::string& path);

}  // namespace flashsim::isa
