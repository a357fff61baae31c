#include "isa/isa.h"

#include <cctype>

namespace flashsim::isa {

static_assert(table_is_ordered(), "kInstructionTable must list opcodes in enum order");

std::optional<Opcode> find_mnemonic(std::string_view text) {
  for (const auto& row : kInstructionTable) {
    if (row.mnemonic.size() != text.size()) continue;
    bool same = true;
    for (std::size_t i = 0; i < text.size() && same; ++i)
      same = std::toupper(static_cast<unsigned char>(text[i])) == row.mnemonic[i];
    if (same) return row.opcode;
  }
  return std::nullopt;
}

}  // namespace flashsim::isa
