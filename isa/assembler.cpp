#include "isa/assembler.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <sstream>

namespace flashsim::isa {

AsmError::AsmError(std::string f, std::uint32_t l, std::uint32_t c, std::string m)
    : std::runtime_error(l == 0 ? f + ": error: " + m
                                : f + ":" + std::to_string(l) + ":" + std::to_string(c) + ": error: " + m),
      file(std::move(f)), line(l), col(c), message(std::move(m)) {}

namespace {

constexpr std::size_t kMaxLineBytes = 64 * 1024;
constexpr int kMaxRegisters = 65535;
constexpr std::int64_t kMaxArrayElements = std::int64_t{1} << 31;

// One physical source line with its number, after the comment is cut off.
struct Line {
  std::uint32_t number;
  std::string_view text;
};

// An index expression compiled to postfix, so a loop body is parsed once and then only evaluated.
// col is where the parser would report the error (overflow, division by zero) at that operation.
struct ExprOp {
  enum class Kind : std::uint8_t { Const, Var, Neg, Add, Sub, Mul, Div, Mod };
  Kind kind;
  std::int64_t value;  // Const: the number; Var: the slot in the loop-variable stack
  std::uint32_t col;
};

// The arithmetic of index expressions, shared by the parser and the evaluator: r = a OP b (Neg:
// a - b with a = 0), or the error to report at the operator.
const char* apply(ExprOp::Kind k, std::int64_t a, std::int64_t b, std::int64_t& r) {
  constexpr const char* kOverflow = "integer overflow in an index expression";
  switch (k) {
    case ExprOp::Kind::Add: return __builtin_add_overflow(a, b, &r) ? kOverflow : nullptr;
    case ExprOp::Kind::Neg:
    case ExprOp::Kind::Sub: return __builtin_sub_overflow(a, b, &r) ? kOverflow : nullptr;
    case ExprOp::Kind::Mul: return __builtin_mul_overflow(a, b, &r) ? kOverflow : nullptr;
    case ExprOp::Kind::Div:
      if (b == 0) return "division by zero in an index expression";
      if (b == -1 && a == std::numeric_limits<std::int64_t>::min()) return kOverflow;
      r = a / b;
      return nullptr;
    case ExprOp::Kind::Mod:
      if (b == 0) return "modulo by zero in an index expression";
      r = b == -1 ? 0 : a % b;  // INT64_MIN % -1 traps on x86
      return nullptr;
    default: return nullptr;  // Const and Var are operands, not operations
  }
}

// An instruction line inside a loop, parsed on its first iteration. Later iterations evaluate its
// expressions and repeat the value checks (ranges, indices); the syntax was checked the first time.
// An operand without a loop variable has the same value every time, and its checks cannot fail
// later (directives are not allowed in loops, and an inferred array only grows, checked where it
// grows), so it is kept from the first iteration and not evaluated again.
struct LineTemplate {
  struct Expr {
    std::uint32_t begin = 0, end = 0;  // range in code
    std::uint32_t col = 0;             // the expression's first column (index messages)
  };
  struct Op {
    Operand::Kind kind = Operand::Kind::None;
    bool transposed = false;
    std::uint32_t col = 0;  // the register's or the array name's column
    std::uint32_t array = 0;
    int index_count = 0;
    std::array<Expr, 2> exprs{};  // the register number, or the indices
    bool varies = true;           // reads a loop variable
  };
  Instruction first;  // as the first iteration emitted it
  Opcode op = Opcode::MOV;
  SourceLoc loc;
  std::uint32_t site = 0;  // in Program::locs
  int operand_count = 0;
  std::array<Op, 4> ops{};
  std::vector<ExprOp> code;
};

class Assembler {
 public:
  class Cursor;
  Assembler(std::string_view text, std::string file, const AssembleOptions& opts)
      : text_(text), opts_(opts) {
    prog_.name = std::move(file);
  }

  Program run() {
    split_lines();
    std::size_t i = 0;
    block(i, 0);
    if (prog_.code.empty()) fail(1, 1, "empty program: no instructions");
    if (opts_.require_declared_params) check_overrides_declared();
    return std::move(prog_);
  }

 private:
  // ---- errors -------------------------------------------------------------------------
  [[noreturn]] void fail(std::uint32_t line, std::size_t col, const std::string& msg) const {
    // Inside a loop the same line runs many times: say which iteration went wrong.
    std::string where;
    for (const auto& [name, value] : loop_vars_) where += (where.empty() ? " (at " : ", ") + name + " = " + std::to_string(value);
    throw AsmError(prog_.name, line, static_cast<std::uint32_t>(col), where.empty() ? msg : msg + where + ")");
  }

  void check_overrides_declared() const {
    for (const auto& [name, value] : opts_.params) {
      if (params_.count(name)) continue;
      std::string declared;
      for (const auto& [known, v] : params_) declared += (declared.empty() ? "" : ", ") + known;
      throw std::invalid_argument("--param " + name + ": " + prog_.name + " declares no .param " + name +
                                  (declared.empty() ? " (it declares none)" : " (it declares: " + declared + ")"));
    }
  }

  // ---- lines ----------------------------------------------------------------------------
  void split_lines() {
    std::size_t pos = 0;
    std::uint32_t number = 0;
    while (pos <= text_.size()) {
      std::size_t end = text_.find('\n', pos);
      if (end == std::string_view::npos) end = text_.size();
      ++number;
      std::string_view raw = text_.substr(pos, end - pos);
      if (!raw.empty() && raw.back() == '\r') raw.remove_suffix(1);
      if (raw.size() > kMaxLineBytes)
        fail(number, kMaxLineBytes + 1,
             "line is " + std::to_string(raw.size()) + " bytes long; the limit is " +
                 std::to_string(kMaxLineBytes));
      for (std::size_t k = 0; k < raw.size(); ++k) {
        unsigned char ch = static_cast<unsigned char>(raw[k]);
        if (ch == 0 || (ch < 32 && ch != '\t') || ch == 127)
          fail(number, k + 1, "this looks like a binary file (control byte 0x" + hex(ch) + ")");
        if (ch >= 128) fail(number, k + 1, "non-ASCII byte 0x" + hex(ch) + "; traces are plain ASCII text");
      }
      raw_lines_.push_back(raw);
      // Blank and comment-only lines are dropped here, so loop bodies never revisit them.
      std::string_view code = strip_comment(raw);
      if (code.find_first_not_of(" \t") != std::string_view::npos) lines_.push_back({number, code});
      if (end == text_.size()) break;
      pos = end + 1;
    }
    last_line_ = number;
    templates_.resize(lines_.size());
    closes_loop_.resize(lines_.size());
    source_lines_reserve();
  }
  void source_lines_reserve() {
    prog_.source_lines.reserve(raw_lines_.size());
    for (auto l : raw_lines_) prog_.source_lines.emplace_back(l);
  }
  static std::string hex(unsigned ch) {
    const char* d = "0123456789abcdef";
    return {d[ch >> 4], d[ch & 15]};
  }
  static std::string_view strip_comment(std::string_view s) {
    std::size_t cut = s.size();
    for (std::size_t k = 0; k < s.size(); ++k) {
      if (s[k] == '#' || s[k] == ';' || (s[k] == '/' && k + 1 < s.size() && s[k + 1] == '/')) {
        cut = k;
        break;
      }
    }
    return s.substr(0, cut);
  }

  // ---- blocks and loops ---------------------------------------------------------------------
  // Assembles lines_[i..] until the matching .end (depth > 0) or the end of the file.
  void block(std::size_t& i, int depth) {
    while (i < lines_.size()) {
      if (const LineTemplate* t = templates_[i].get()) {
        instruction_from(*t);
        ++i;
        continue;
      }
      if (closes_loop_[i]) return;  // an .end already checked on an earlier iteration
      Cursor c(this, lines_[i]);
      c.skip_space();
      if (c.done()) {
        ++i;
        continue;
      }
      if (c.peek() == '.') {
        std::size_t col = c.col();
        std::string word = c.word_after_dot();
        if (word == "end") {
          if (depth == 0) fail(c.line(), col, ".end without a matching .for");
          c.expect_end();
          closes_loop_[i] = 1;
          return;  // caller advances past .end
        }
        if (word == "for") {
          for_loop(i, c, col, depth);
          continue;
        }
        if (timing_directive(word, col, c, depth)) {
          ++i;
          continue;
        }
        if (depth > 0) fail(c.line(), col, "directive ." + word + " is not allowed inside a .for loop");
        directive(word, col, c);
        ++i;
        continue;
      }
      if (depth > 0) {
        // parsed on the first iteration; later ones only evaluate
        auto t = std::make_unique<LineTemplate>();
        instruction(c, t.get());
        templates_[i] = std::move(t);
      } else {
        instruction(c, nullptr);
      }
      ++i;
    }
    if (depth > 0) fail(for_lines_.back(), 1, ".for without a matching .end");
  }

  void for_loop(std::size_t& i, Cursor& c, std::size_t for_col, int depth);
  void reserve_for_loop(std::size_t per_iteration, std::int64_t start, std::int64_t end, std::int64_t step);
  std::size_t matching_end(std::size_t body);

  // ---- directives --------------------------------------------------------------------------
  void directive(const std::string& word, std::size_t col, Cursor& c);
  // .units/.unit (top level) and .stream/.barrier/.arrive/.wait/.wait_for (anywhere, loops included):
  // false when `word` is none of them.
  bool timing_directive(const std::string& word, std::size_t col, Cursor& c, int depth);
  std::string barrier_name(Cursor& c);
  std::uint16_t barrier_id(const std::string& name, std::uint32_t count, bool declare, std::size_t col, Cursor& c);

  // ---- instructions ------------------------------------------------------------------------
  // Parses one instruction line and emits it; with t, also records the line for later iterations.
  void instruction(Cursor& c, LineTemplate* t);
  void instruction_from(const LineTemplate& t);
  void append(const Instruction& in, SourceLoc loc, std::uint32_t site);  // into the trace, against opts_.max_instructions
  bool overflows(std::size_t per_iteration, std::int64_t start, std::int64_t end, std::int64_t step) const;
  bool has_inner_loop(std::size_t body, std::size_t end);
  std::int64_t evaluate(std::uint32_t line, const std::vector<ExprOp>& code, LineTemplate::Expr e);
  std::uint16_t checked_reg(std::uint32_t line, std::size_t at, std::int64_t n);
  Operand checked_mem(std::uint32_t line, std::uint32_t array, int count, const std::int64_t* index,
                      const std::uint32_t* index_col);

 public:
  // A cursor over one line, with column numbers for messages.
  class Cursor {
   public:
    Cursor(Assembler* a, const Line& l) : a_(a), line_(l) {}
    // While set, expr() also appends its postfix form here.
    void record_into(std::vector<ExprOp>* code) { rec_ = code; }
    std::vector<ExprOp>* recording() const { return rec_; }
    std::uint32_t line() const { return line_.number; }
    std::size_t col() const { return pos_ + 1; }
    bool done() {
      skip_space();
      return pos_ >= line_.text.size();
    }
    char peek() const { return pos_ < line_.text.size() ? line_.text[pos_] : '\0'; }
    char peek2() const { return pos_ + 1 < line_.text.size() ? line_.text[pos_ + 1] : '\0'; }
    void skip_space() {
      while (pos_ < line_.text.size() && (line_.text[pos_] == ' ' || line_.text[pos_] == '\t')) ++pos_;
    }
    [[noreturn]] void fail(const std::string& msg) const { a_->fail(line(), col(), msg); }
    [[noreturn]] void fail_at(std::size_t col, const std::string& msg) const { a_->fail(line(), col, msg); }
    bool accept(char ch) {
      skip_space();
      if (peek() == ch) {
        ++pos_;
        return true;
      }
      return false;
    }
    void expect(char ch, const char* what) {
      if (!accept(ch)) fail(std::string("expected ") + what + describe_here());
    }
    std::string describe_here() const {
      if (pos_ >= line_.text.size()) return " but the line ends";
      return std::string(" but found '") + peek() + "'";
    }
    void expect_end() {
      if (!done()) fail("unexpected '" + std::string(rest()) + "' at the end of the line");
    }
    std::string_view rest() const {
      auto r = line_.text.substr(pos_);
      while (!r.empty() && (r.back() == ' ' || r.back() == '\t')) r.remove_suffix(1);
      return r;
    }
    static bool ident_start(char ch) { return std::isalpha(static_cast<unsigned char>(ch)) || ch == '_'; }
    static bool ident_char(char ch) { return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_'; }
    std::string ident(const char* what) {
      skip_space();
      if (!ident_start(peek())) fail(std::string("expected ") + what + describe_here());
      std::size_t start = pos_;
      while (ident_char(peek())) ++pos_;
      return std::string(line_.text.substr(start, pos_ - start));
    }
    std::string word_after_dot() {
      ++pos_;  // '.'
      std::size_t start = pos_;
      while (ident_char(peek())) ++pos_;
      std::string w(line_.text.substr(start, pos_ - start));
      for (auto& ch : w) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      if (w.empty()) fail_at(start, "expected a directive name after '.'");
      return w;
    }
    // Integer expression: + - * / % unary minus, parentheses, numbers, names.
    std::int64_t expr() { return sum(); }
    double number() {
      skip_space();
      std::size_t start = pos_;
      while (pos_ < line_.text.size() && line_.text[pos_] != ',' && line_.text[pos_] != ' ' &&
             line_.text[pos_] != '\t')
        ++pos_;
      std::string tok(line_.text.substr(start, pos_ - start));
      if (tok.empty()) fail_at(start + 1, "expected a number" + describe_here());
      std::string low = tok;
      for (auto& ch : low) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      if (low == "inf" || low == "+inf") return std::numeric_limits<double>::infinity();
      if (low == "-inf") return -std::numeric_limits<double>::infinity();
      if (low == "nan") return std::numeric_limits<double>::quiet_NaN();
      char* endp = nullptr;
      errno = 0;
      double v = std::strtod(tok.c_str(), &endp);
      if (endp != tok.c_str() + tok.size() || tok.find_first_of("xXpP") != std::string::npos)
        fail_at(start + 1, "'" + tok + "' is not a number");
      if (errno == ERANGE && std::isinf(v)) fail_at(start + 1, "'" + tok + "' is out of range for a double");
      return v;
    }

   private:
    void emit(ExprOp::Kind k, std::int64_t value, std::size_t col) {
      if (rec_) rec_->push_back({k, value, static_cast<std::uint32_t>(col)});
    }
    // An error is reported at col: the operator for / and %, after the right operand otherwise.
    std::int64_t combine(ExprOp::Kind k, std::int64_t a, std::int64_t b, std::size_t col) {
      emit(k, 0, col);
      std::int64_t r = 0;
      if (const char* error = apply(k, a, b, r)) fail_at(col, error);
      return r;
    }
    std::int64_t sum() {
      std::int64_t v = product();
      for (;;) {
        ExprOp::Kind k;
        if (accept('+')) k = ExprOp::Kind::Add;
        else if (accept('-')) k = ExprOp::Kind::Sub;
        else return v;
        std::int64_t b = product();
        v = combine(k, v, b, col());
      }
    }
    std::int64_t product() {
      std::int64_t v = unary();
      for (;;) {
        skip_space();
        std::size_t at = col();
        if (accept('*')) {
          std::int64_t b = unary();
          v = combine(ExprOp::Kind::Mul, v, b, col());
        } else if (accept('/')) {
          std::int64_t b = unary();
          v = combine(ExprOp::Kind::Div, v, b, at);
        } else if (accept('%')) {
          std::int64_t b = unary();
          v = combine(ExprOp::Kind::Mod, v, b, at);
        } else return v;
      }
    }
    std::int64_t unary() {
      if (accept('-')) {
        std::int64_t b = unary();
        return combine(ExprOp::Kind::Neg, 0, b, col());
      }
      if (accept('+')) return unary();
      return primary();
    }
    std::int64_t primary() {
      skip_space();
      if (accept('(')) {
        std::int64_t v = sum();
        expect(')', "')'");
        return v;
      }
      if (std::isdigit(static_cast<unsigned char>(peek()))) {
        std::size_t start = pos_;
        std::int64_t v = 0;
        while (std::isdigit(static_cast<unsigned char>(peek()))) {
          if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, peek() - '0', &v))
            fail_at(start + 1, "integer is too large");
          ++pos_;
        }
        if (ident_char(peek())) fail("unexpected '" + std::string(1, peek()) + "' after a number");
        emit(ExprOp::Kind::Const, v, 0);
        return v;
      }
      if (ident_start(peek())) {
        std::size_t start = pos_;
        std::string name = ident("a name");
        // a loop variable is read at each evaluation; a .param is fixed once the loop runs
        if (auto slot = a_->loop_slot(name)) {
          emit(ExprOp::Kind::Var, static_cast<std::int64_t>(*slot), 0);
          return a_->loop_vars_[*slot].second;
        }
        auto v = a_->lookup(name);
        if (!v) fail_at(start + 1, "unknown name '" + name + "' (loop variables and .param names are allowed)");
        emit(ExprOp::Kind::Const, *v, 0);
        return *v;
      }
      fail("expected a number, a name or '('" + describe_here());
    }

    Assembler* a_;
    Line line_;
    std::size_t pos_ = 0;
    std::vector<ExprOp>* rec_ = nullptr;
  };

  // The innermost loop variable called name, as its index in loop_vars_.
  std::optional<std::size_t> loop_slot(const std::string& name) const {
    for (std::size_t k = loop_vars_.size(); k-- > 0;)
      if (loop_vars_[k].first == name) return k;
    return std::nullopt;
  }
  std::optional<std::int64_t> lookup(const std::string& name) const {
    if (auto slot = loop_slot(name)) return loop_vars_[*slot].second;
    if (auto p = params_.find(name); p != params_.end()) return p->second;
    return std::nullopt;
  }

 private:
  Operand reg_operand(Cursor& c, bool allow_transpose, LineTemplate::Op* t);
  Operand mem_operand(Cursor& c, const std::string& name, std::size_t name_col, LineTemplate::Op* t);
  std::uint32_t array_for_use(Cursor& c, const std::string& name, std::size_t col, int rank);
  void shape_directive(Cursor& c);

  std::string_view text_;
  AssembleOptions opts_;
  Program prog_;
  std::vector<std::string_view> raw_lines_;
  std::vector<Line> lines_;
  std::uint32_t last_line_ = 1;
  std::uint16_t current_stream_ = 0;
  std::uint32_t units_line_ = 0;
  std::map<std::string, std::int64_t> params_;
  std::vector<std::pair<std::string, std::int64_t>> loop_vars_;
  std::size_t loop_iterations_ = 0;  // over all loops, against opts_.max_loop_iterations
  // Once a loop is sure to overflow max_instructions (a body without inner loops emits as many
  // instructions every iteration), the rest are counted, not stored: every line is still checked,
  // so the first error is the same, at the same line and iteration, without gigabytes of trace.
  bool discarding_ = false;
  std::size_t discarded_ = 0;
  std::vector<std::unique_ptr<LineTemplate>> templates_;  // per entry of lines_, once parsed in a loop
  std::vector<std::int64_t> stack_;                        // evaluate()'s operand stack
  std::vector<std::uint8_t> closes_loop_;                  // per entry of lines_: a checked .end
  std::vector<std::uint32_t> for_lines_;
  std::uint32_t l2_line_ = 0;  // line of the .l2 directive, 0 before one
};

void Assembler::for_loop(std::size_t& i, Cursor& c, std::size_t for_col, int depth) {
  // .for VAR in START..END [step S]   (END is exclusive)
  std::uint32_t line = c.line();
  std::size_t var_col = (c.skip_space(), c.col());
  std::string var = c.ident("a loop variable after .for");
  if (lookup(var)) c.fail_at(var_col, "'" + var + "' is already defined; pick another loop variable name");
  std::size_t in_col = (c.skip_space(), c.col());
  std::string in = c.ident("'in' after the loop variable");
  for (auto& ch : in) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (in != "in") c.fail_at(in_col, "expected 'in' after the loop variable, as in .for i in 0..n");
  std::int64_t start = c.expr();
  if (!(c.accept('.') && c.accept('.'))) c.fail("expected '..' between the loop bounds" + c.describe_here());
  std::int64_t end = c.expr();
  std::int64_t step = 1;
  if (!c.done()) {
    std::size_t step_col = c.col();
    std::string kw = c.ident("'step' or the end of the line");
    for (auto& ch : kw) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (kw != "step") c.fail_at(step_col, "expected 'step' or the end of the line");
    step_col = (c.skip_space(), c.col());
    step = c.expr();
    if (step <= 0) c.fail_at(step_col, "the loop step must be positive");
  }
  c.expect_end();

  // Find the .end first, so a missing one is reported at this .for (and at its column) before
  // any iteration runs. A loop that runs zero times is skipped here: its body is not assembled.
  std::size_t body = i + 1;
  std::size_t after = matching_end(body);
  if (after >= lines_.size()) fail(line, for_col, ".for without a matching .end");
  for_lines_.push_back(line);
  loop_vars_.emplace_back(var, start);  // the value is updated in place: no string copy an iteration
  const std::size_t slot = loop_vars_.size() - 1;  // by index: inner loops may reallocate the vector
  const std::size_t size_before = prog_.code.size();
  for (std::int64_t v = start; v < end; v += step) {
    loop_vars_[slot].second = v;
    if (++loop_iterations_ > opts_.max_loop_iterations)
      fail(line, for_col, "the loops run more than " + std::to_string(opts_.max_loop_iterations) + " iterations");
    std::size_t k = body;
    block(k, depth + 1);
    if (v == start) {
      const std::size_t per_iteration = prog_.code.size() - size_before;
      reserve_for_loop(per_iteration, start, end, step);
      if (!discarding_ && !has_inner_loop(body, after) && overflows(per_iteration, start, end, step)) discarding_ = true;
    }
    if (__builtin_add_overflow(v, step, &v)) break;
    v -= step;
  }
  loop_vars_.pop_back();
  for_lines_.pop_back();
  i = after + 1;  // past .end
}

// After a loop's first iteration: room for the rest, if they emit as many instructions, and as
// much again for what follows (as doubling would leave), so a big trace is not copied as it
// grows: each copy writes fresh memory. Growth by doubling takes over where the guess is short.
// Capacity that is never written costs address space only.
void Assembler::reserve_for_loop(std::size_t per_iteration, std::int64_t start, std::int64_t end, std::int64_t step) {
  const auto iterations = (static_cast<__int128>(end) - start + step - 1) / step;
  const auto want = static_cast<__int128>(prog_.code.size()) + (iterations - 1) * per_iteration;
  const auto limit = static_cast<__int128>(opts_.max_instructions);
  // A trace past the limit fails anyway; reserving for it would only claim memory.
  if (want > limit || want <= static_cast<__int128>(prog_.code.capacity())) return;
  prog_.code.reserve(static_cast<std::size_t>(std::min(2 * want, limit)));
}

// Whether this loop's remaining iterations, each emitting per_iteration instructions, take the
// trace past max_instructions.
bool Assembler::overflows(std::size_t per_iteration, std::int64_t start, std::int64_t end, std::int64_t step) const {
  const auto iterations = (static_cast<__int128>(end) - start + step - 1) / step;
  return static_cast<__int128>(prog_.code.size() + discarded_) + (iterations - 1) * per_iteration >
         static_cast<__int128>(opts_.max_instructions);
}

// Whether lines_[body, end) hold a .for.
bool Assembler::has_inner_loop(std::size_t body, std::size_t end) {
  for (std::size_t k = body; k < end; ++k) {
    Cursor s(this, lines_[k]);
    if (!s.done() && s.peek() == '.' && s.word_after_dot() == "for") return true;
  }
  return false;
}

// Index of the .end that closes a loop whose body starts at lines_[body]; lines_.size() if none.
std::size_t Assembler::matching_end(std::size_t body) {
  int nest = 0;
  for (std::size_t k = body; k < lines_.size(); ++k) {
    Cursor s(this, lines_[k]);
    if (s.done() || s.peek() != '.') continue;
    std::string w = s.word_after_dot();
    if (w == "for") ++nest;
    if (w == "end") {
      if (nest == 0) return k;
      --nest;
    }
  }
  return lines_.size();
}

void Assembler::directive(const std::string& word, std::size_t col, Cursor& c) {
  if (word == "regs") {
    std::size_t at = (c.skip_space(), c.col());
    std::int64_t n = c.expr();
    if (n < 1 || n > kMaxRegisters) c.fail_at(at, "register count must be between 1 and " + std::to_string(kMaxRegisters));
    if (prog_.highest_reg >= n)
      c.fail_at(at, ".regs " + std::to_string(n) + " comes after R" + std::to_string(prog_.highest_reg) + " was used");
    prog_.config.regs = static_cast<int>(n);
  } else if (word == "elem") {
    std::size_t at = (c.skip_space(), c.col());
    std::int64_t n = c.expr();
    if (n != 1 && n != 2 && n != 4 && n != 8) c.fail_at(at, "element size must be 1, 2, 4 or 8 bytes");
    prog_.config.elem_bytes = static_cast<int>(n);
  } else if (word == "dtype") {
    std::size_t at = (c.skip_space(), c.col());
    std::string t = c.ident("f32 or f64");
    if (t == "f32") prog_.config.f64 = false;
    else if (t == "f64") prog_.config.f64 = true;
    else c.fail_at(at, "unknown dtype '" + t + "'; use f32 or f64");
  } else if (word == "sram") {
    std::size_t at = (c.skip_space(), c.col());
    std::int64_t n = c.expr();
    if (n <= 0) c.fail_at(at, "SRAM size must be positive");
    prog_.config.sram_bytes = static_cast<std::uint64_t>(n);
  } else if (word == "l2") {
    // .l2 BYTES [line=L] [sector=S]: the machine's traffic goes through an L2 of BYTES.
    std::size_t at = (c.skip_space(), c.col());
    if (l2_line_) c.fail_at(col, ".l2 is already set on line " + std::to_string(l2_line_) + "; a machine has one L2");
    std::int64_t n = c.expr();
    if (n <= 0) c.fail_at(at, "L2 size must be positive");
    isa::L2Geometry g;
    g.capacity_bytes = static_cast<std::uint64_t>(n);
    bool sector_given = false;
    while (!c.done()) {
      std::size_t kat = (c.skip_space(), c.col());
      std::string key = c.ident("line= or sector=");
      if (key != "line" && key != "sector") c.fail_at(kat, "unknown .l2 option '" + key + "' (line=BYTES, sector=BYTES)");
      c.expect('=', "'=' after the option name");
      std::size_t vat = (c.skip_space(), c.col());
      std::int64_t v = c.expr();
      if (v <= 0 || v > (std::int64_t{1} << 20)) c.fail_at(vat, "L2 " + key + " size must be between 1 and 1048576 bytes");
      (key == "line" ? g.line_bytes : g.sector_bytes) = static_cast<std::uint32_t>(v);
      sector_given |= key == "sector";
    }
    // A line smaller than the default sector is a single sector.
    if (!sector_given && g.sector_bytes > g.line_bytes) g.sector_bytes = g.line_bytes;
    if (std::string why = l2_geometry_error(g); !why.empty()) c.fail_at(at, why);
    prog_.config.l2 = g;
    l2_line_ = c.line();
  } else if (word == "causal") {
    // .causal [D]: MASK hides keys right of the diagonal col = row + D (D = 0 when omitted).
    c.skip_space();
    prog_.config.causal_diag = c.done() ? 0 : c.expr();
  } else if (word == "seed") {
    std::size_t at = (c.skip_space(), c.col());
    std::int64_t n = c.expr();
    if (n < 0) c.fail_at(at, "seed must not be negative");
    prog_.config.seed = static_cast<std::uint64_t>(n);
  } else if (word == "cost") {
    do {
      std::size_t at = (c.skip_space(), c.col());
      std::string m = c.ident("an opcode name");
      auto op = find_mnemonic(m);
      if (!op) c.fail_at(at, "unknown opcode '" + m + "' in .cost");
      c.expect('=', "'=' after the opcode");
      std::size_t vat = (c.skip_space(), c.col());
      std::int64_t v = c.expr();
      if (v < 0 || v > 1'000'000) c.fail_at(vat, "cycle cost must be between 0 and 1000000");
      prog_.config.cycles[static_cast<std::size_t>(*op)] = static_cast<std::uint32_t>(v);
    } while (c.accept(','));
  } else if (word == "param") {
    std::size_t at = (c.skip_space(), c.col());
    std::string name = c.ident("a parameter name");
    if (params_.count(name)) c.fail_at(at, "parameter '" + name + "' is already defined");
    c.expect('=', "'=' after the parameter name");
    std::int64_t v = c.expr();
    if (auto o = opts_.params.find(name); o != opts_.params.end()) v = o->second;
    params_[name] = v;
  } else if (word == "array") {
    shape_directive(c);
  } else if (word == "input" || word == "fill") {
    std::size_t at = (c.skip_space(), c.col());
    std::string name = c.ident("an array name");
    auto id = prog_.find_array(name);
    if (!id) c.fail_at(at, "." + word + " names '" + name + "', which no .array declared before it");
    ArrayDecl& a = prog_.arrays[*id];
    if (word == "fill") {
      a.fill = c.number();
    } else {
      std::vector<double> values;
      do values.push_back(c.number());
      while (c.accept(','));
      if (static_cast<std::int64_t>(values.size()) != a.elements())
        c.fail_at(at, "'" + name + "' has " + std::to_string(a.elements()) + " elements but " +
                          std::to_string(values.size()) + " values were given");
      a.input = std::move(values);
    }
  } else {
    c.fail_at(col, "unknown directive ." + word +
                       " (known: .regs .elem .dtype .sram .l2 .causal .seed .cost .param .array .input .fill .for .end"
                       " .units .unit .stream .barrier .arrive .wait .wait_for)");
  }
  c.expect_end();
}

void Assembler::shape_directive(Cursor& c) {
  // .array NAME[rows][cols] [tile[tr][tc]] [elem B]
  std::size_t at = (c.skip_space(), c.col());
  std::string name = c.ident("an array name");
  if (prog_.find_array(name)) c.fail_at(at, "array '" + name + "' is already declared or used");
  ArrayDecl a;
  a.name = name;
  a.declared = true;
  auto dims = [&](const char* what) {
    std::vector<std::int64_t> d;
    while (c.accept('[')) {
      std::size_t dc = (c.skip_space(), c.col());
      std::int64_t v = c.expr();
      if (v <= 0) c.fail_at(dc, std::string(what) + " must be positive");
      c.expect(']', "']'");
      d.push_back(v);
    }
    if (d.empty() || d.size() > 2) c.fail(std::string("expected 1 or 2 bracketed ") + what + ", as in x[8] or a[4][4]");
    return d;
  };
  auto shape = dims("dimensions");
  a.rank = static_cast<int>(shape.size());
  a.rows = shape[0];
  a.cols = a.rank == 2 ? shape[1] : 1;
  if (a.rows > kMaxArrayElements / a.cols) c.fail_at(at, "array '" + name + "' is too large");
  while (!c.done()) {
    std::size_t kc = c.col();
    std::string kw = c.ident("'tile' or 'elem'");
    if (kw == "tile") {
      auto t = dims("tile dimensions");
      if (static_cast<int>(t.size()) != a.rank) c.fail_at(kc, "the tile needs as many dimensions as the array");
      a.tile_rows = t[0];
      a.tile_cols = a.rank == 2 ? t[1] : 1;
    } else if (kw == "elem") {
      std::size_t vc = (c.skip_space(), c.col());
      std::int64_t b = c.expr();
      if (b != 1 && b != 2 && b != 4 && b != 8) c.fail_at(vc, "element size must be 1, 2, 4 or 8 bytes");
      a.elem_bytes = static_cast<int>(b);
    } else {
      c.fail_at(kc, "expected 'tile' or 'elem', found '" + kw + "'");
    }
  }
  prog_.arrays.push_back(std::move(a));
}

Operand Assembler::reg_operand(Cursor& c, bool allow_transpose, LineTemplate::Op* t) {
  Operand o;
  o.kind = Operand::Kind::Reg;
  std::size_t at = c.col();
  c.accept('R') || c.accept('r');
  std::int64_t n = 0;
  const auto begin = static_cast<std::uint32_t>(c.recording() ? c.recording()->size() : 0);
  if (c.accept('{')) {
    n = c.expr();
    c.expect('}', "'}'");
  } else {
    if (!std::isdigit(static_cast<unsigned char>(c.peek()))) c.fail_at(at, "malformed register: expected R<number> or R{expression}");
    n = c.expr();
  }
  if (t) {
    t->kind = Operand::Kind::Reg;
    t->col = static_cast<std::uint32_t>(at);
    t->exprs[0] = {begin, static_cast<std::uint32_t>(c.recording()->size()), static_cast<std::uint32_t>(at)};
  }
  o.reg = checked_reg(c.line(), at, n);
  c.skip_space();
  if (c.peek() == '^') {
    std::size_t tc = c.col();
    c.accept('^');
    if (!(c.accept('T') || c.accept('t'))) c.fail("expected T after '^'");
    if (!allow_transpose) c.fail_at(tc, "only source registers can be transposed");
    o.transposed = true;
  }
  if (t) t->transposed = o.transposed;
  return o;
}

std::uint16_t Assembler::checked_reg(std::uint32_t line, std::size_t at, std::int64_t n) {
  if (n < 0 || n >= kMaxRegisters) fail(line, at, "register number " + std::to_string(n) + " is out of range");
  if (prog_.config.regs && n >= *prog_.config.regs)
    fail(line, at, "R" + std::to_string(n) + " is outside the machine: it has " +
                       std::to_string(*prog_.config.regs) + " registers (R0..R" +
                       std::to_string(*prog_.config.regs - 1) + ")");
  prog_.highest_reg = std::max(prog_.highest_reg, static_cast<int>(n));
  return static_cast<std::uint16_t>(n);
}

std::uint32_t Assembler::array_for_use(Cursor& c, const std::string& name, std::size_t col, int rank) {
  if (auto id = prog_.find_array(name)) {
    const ArrayDecl& a = prog_.arrays[*id];
    if (rank == 2 && a.rank == 1) c.fail_at(col, "'" + name + "' has one dimension; write " + name + "[i]");
    if (rank == 1 && a.rank == 2 && a.tile_grid_cols() != 1)
      c.fail_at(col, "'" + name + "' has " + std::to_string(a.tile_grid_cols()) + " tile columns; write " + name + "[i][j]");
    if (!a.declared && rank != a.rank)
      c.fail_at(col, "'" + name + "' was used with " + std::to_string(a.rank) + " index(es) before and " +
                         std::to_string(rank) + " here");
    return *id;
  }
  ArrayDecl a;
  a.name = name;
  a.rank = rank;
  a.rows = 0;
  a.cols = rank == 2 ? 0 : 1;
  prog_.arrays.push_back(std::move(a));
  return static_cast<std::uint32_t>(prog_.arrays.size() - 1);
}

Operand Assembler::mem_operand(Cursor& c, const std::string& name, std::size_t name_col, LineTemplate::Op* t) {
  std::int64_t index[2] = {0, 0};
  std::uint32_t index_col[2] = {0, 0};
  LineTemplate::Expr exprs[2];
  int count = 0;
  while (c.accept('[')) {
    std::size_t at = (c.skip_space(), c.col());
    const auto begin = static_cast<std::uint32_t>(c.recording() ? c.recording()->size() : 0);
    std::int64_t v = c.expr();
    c.expect(']', "']'");
    if (count < 2) {
      index[count] = v;
      index_col[count] = static_cast<std::uint32_t>(at);
      if (t) exprs[count] = {begin, static_cast<std::uint32_t>(c.recording()->size()), static_cast<std::uint32_t>(at)};
    }
    ++count;
  }
  if (count == 0 || count > 2)
    c.fail_at(name_col, "malformed memory operand: write " + name + "[i] or " + name + "[i][j]");
  std::uint32_t id = array_for_use(c, name, name_col, count);
  if (t) {
    t->kind = Operand::Kind::Mem;
    t->col = static_cast<std::uint32_t>(name_col);
    t->array = id;
    t->index_count = count;
    t->exprs = {exprs[0], exprs[1]};
  }
  return checked_mem(c.line(), id, count, index, index_col);
}

// The checks on a memory operand's values, and the growth of an array whose shape is inferred.
Operand Assembler::checked_mem(std::uint32_t line, std::uint32_t array, int count, const std::int64_t* index,
                               const std::uint32_t* index_col) {
  ArrayDecl& a = prog_.arrays[array];
  const std::string& name = a.name;
  Operand o;
  o.kind = Operand::Kind::Mem;
  o.array = array;
  o.row = index[0];
  o.col = count == 2 ? index[1] : 0;
  for (int k = 0; k < count; ++k)
    if (index[k] < 0) fail(line, index_col[k], "index " + std::to_string(index[k]) + " is negative");
  if (a.declared) {
    std::int64_t gr = a.tile_grid_rows(), gc = a.tile_grid_cols();
    if (o.row >= gr) fail(line, index_col[0], "index " + std::to_string(o.row) + " is outside '" + name + "', which has " + std::to_string(gr) + (a.tile_rows > 1 ? " tile rows" : " rows"));
    if (o.col >= gc) fail(line, index_col[count - 1], "index " + std::to_string(o.col) + " is outside '" + name + "', which has " + std::to_string(gc) + (a.tile_cols > 1 ? " tile columns" : " columns"));
  } else {
    if (o.row >= kMaxArrayElements || o.col >= kMaxArrayElements / std::max<std::int64_t>(1, o.row + 1))
      fail(line, index_col[0], "index is too large for an inferred array");
    a.rows = std::max(a.rows, o.row + 1);
    if (a.rank == 2) a.cols = std::max(a.cols, o.col + 1);
    if (a.rows * a.cols > kMaxArrayElements) fail(line, index_col[0], "array '" + name + "' would be too large");
  }
  return o;
}

void Assembler::instruction(Cursor& c, LineTemplate* t) {
  if (t) c.record_into(&t->code);
  std::size_t at = c.col();
  std::string m = c.ident("an instruction");
  auto op = find_mnemonic(m);
  if (!op) c.fail_at(at, "unknown instruction '" + m + "'");
  const OpInfo& info = isa::info(*op);
  Instruction in;
  in.op = *op;
  const SourceLoc loc{c.line(), static_cast<std::uint32_t>(at)};
  int n = 0;
  auto usage = [&] { return " (" + std::string(info.syntax) + ")"; };
  c.skip_space();
  if (!c.done()) {
    do {
      c.skip_space();
      std::size_t oc = c.col();
      if (n >= info.operand_count)
        c.fail_at(oc, std::string(info.mnemonic) + " takes " + std::to_string(info.operand_count) + " operands" + usage());
      OperandKind want = info.operands[n];
      bool want_reg = want == OperandKind::SrcReg || want == OperandKind::DstReg;
      // A register is R/r followed by a digit or '{'; anything else that starts a name is memory.
      char p0 = c.peek(), p1 = c.peek2();
      bool looks_reg = (p0 == 'R' || p0 == 'r') && (std::isdigit(static_cast<unsigned char>(p1)) || p1 == '{');
      if (looks_reg) {
        if (!want_reg) c.fail_at(oc, "operand " + std::to_string(n + 1) + " of " + std::string(info.mnemonic) + " must be a memory location such as x[0]" + usage());
        in.set_operand(n, reg_operand(c, want == OperandKind::SrcReg, t ? &t->ops[n] : nullptr));
      } else if (Cursor::ident_start(p0)) {
        std::string name = c.ident("an operand");
        if (!want_reg || c.peek() == '[') {
          if (want_reg) c.fail_at(oc, "operand " + std::to_string(n + 1) + " of " + std::string(info.mnemonic) + " must be a register" + usage());
          in.set_operand(n, mem_operand(c, name, oc, t ? &t->ops[n] : nullptr));
        } else {
          c.fail_at(oc, "malformed operand '" + name + "': expected a register such as R0" + usage());
        }
      } else {
        c.fail_at(oc, "malformed operand" + c.describe_here());
      }
      ++n;
    } while (c.accept(','));
  }
  c.expect_end();
  if (n != info.operand_count)
    c.fail_at(at, std::string(info.mnemonic) + " takes " + std::to_string(info.operand_count) + " operands, got " + std::to_string(n) + usage());
  const std::uint32_t site = prog_.locs.add_site(loc);
  append(in, loc, site);
  if (t) {
    t->first = in;
    t->op = in.op;
    t->loc = loc;
    t->site = site;
    t->operand_count = n;
    for (int k = 0; k < n; ++k) {
      LineTemplate::Op& o = t->ops[k];
      o.varies = false;
      for (int e = 0; e < (o.kind == Operand::Kind::Reg ? 1 : o.index_count); ++e)
        for (std::uint32_t x = o.exprs[e].begin; x < o.exprs[e].end; ++x)
          o.varies = o.varies || t->code[x].kind == ExprOp::Kind::Var;
    }
  }
}

// A later iteration of a parsed loop line: the same checks, in the same order, as instruction().
void Assembler::instruction_from(const LineTemplate& t) {
  const std::uint32_t line = t.loc.line;
  Instruction in = t.first;
  for (int k = 0; k < t.operand_count; ++k) {
    const LineTemplate::Op& op = t.ops[k];
    if (!op.varies) continue;
    if (op.kind == Operand::Kind::Reg) {
      Operand o;
      o.kind = Operand::Kind::Reg;
      o.reg = checked_reg(line, op.col, evaluate(line, t.code, op.exprs[0]));
      o.transposed = op.transposed;
      in.set_operand(k, o);
    } else {
      std::int64_t index[2] = {0, 0};
      std::uint32_t index_col[2] = {0, 0};
      for (int e = 0; e < op.index_count; ++e) {
        index[e] = evaluate(line, t.code, op.exprs[e]);
        index_col[e] = op.exprs[e].col;
      }
      in.set_operand(k, checked_mem(line, op.array, op.index_count, index, index_col));
    }
  }
  append(in, t.loc, t.site);
}

void Assembler::append(const Instruction& in, SourceLoc loc, std::uint32_t site) {
  if (prog_.code.size() + discarded_ >= opts_.max_instructions)
    fail(loc.line, loc.col, "the expanded trace exceeds " + std::to_string(opts_.max_instructions) + " instructions");
  if (discarding_) {
    ++discarded_;
    return;
  }
  prog_.code.push_back(in);
  prog_.locs.push_back(site);
  if (!prog_.timing.streams.empty()) prog_.timing.stream_of.push_back(current_stream_);
}

std::string Assembler::barrier_name(Cursor& c) {
  std::string name = c.ident("a barrier name");
  if (c.accept('{')) {  // full{j % 2}: one barrier per value, as R{k} names a register
    std::size_t at = (c.skip_space(), c.col());
    std::int64_t v = c.expr();
    if (v < 0 || v > 1'000'000) c.fail_at(at, "a barrier index must be between 0 and 1000000");
    c.expect('}', "'}' after the barrier index");
    name += std::to_string(v);
  }
  return name;
}

std::uint16_t Assembler::barrier_id(const std::string& name, std::uint32_t count, bool declare, std::size_t col,
                                    Cursor& c) {
  auto& bars = prog_.timing.barriers;
  for (std::size_t b = 0; b < bars.size(); ++b) {
    if (bars[b].name != name) continue;
    if (declare && bars[b].count != count)
      c.fail_at(col, "barrier '" + name + "' is already declared with count=" + std::to_string(bars[b].count));
    return static_cast<std::uint16_t>(b);
  }
  if (bars.size() >= 4096) c.fail_at(col, "more than 4096 barriers");
  bars.push_back(BarrierDecl{name, count});
  return static_cast<std::uint16_t>(bars.size() - 1);
}

bool Assembler::timing_directive(const std::string& word, std::size_t col, Cursor& c, int depth) {
  TimingSpec& t = prog_.timing;
  if (word == "units") {
    if (depth > 0) c.fail_at(col, "directive .units is not allowed inside a .for loop");
    if (units_line_) c.fail_at(col, ".units is already set on line " + std::to_string(units_line_));
    std::size_t at = (c.skip_space(), c.col());
    std::string name = c.ident("a GPU preset name");
    const GpuPreset* p = find_gpu_preset(name);
    if (!p) c.fail_at(at, "unknown GPU preset '" + name + "' (known: " + gpu_preset_names() + ")");
    t.units = UnitsConfig{std::string(p->name), p->units, false, p->beside_tensor};
    units_line_ = c.line();
  } else if (word == "unit") {
    // .unit NAME rate=R latency=L: one unit's figures, over the preset's.
    if (depth > 0) c.fail_at(col, "directive .unit is not allowed inside a .for loop");
    if (!t.units) c.fail_at(col, ".unit needs a .units line before it (e.g. .units h100)");
    std::size_t at = (c.skip_space(), c.col());
    std::string name = c.ident("a unit name");
    auto u = find_unit(name);
    if (!u) c.fail_at(at, "unknown unit '" + name + "' (units: memory, tensor, special, vector)");
    UnitRate& r = t.units->units[static_cast<std::size_t>(*u)];
    bool any = false;
    while (!c.done()) {
      std::size_t kat = (c.skip_space(), c.col());
      std::string key = c.ident("rate= or latency=");
      if (key != "rate" && key != "latency") c.fail_at(kat, "unknown .unit option '" + key + "' (rate=, latency=)");
      c.expect('=', "'=' after the option name");
      std::size_t vat = (c.skip_space(), c.col());
      double v = c.number();
      if (const std::string why = unit_figure_error(key, v); !why.empty()) c.fail_at(vat, why);
      (key == "rate" ? r.rate : r.latency) = v;
      any = true;
    }
    if (!any) c.fail("expected rate= or latency= after the unit name");
    t.units->redefined = true;
  } else if (word == "stream") {
    std::string name = c.ident("a stream name");
    if (t.streams.empty()) {
      // Instructions before the first .stream belong to "main"; none before it: no "main".
      if (!prog_.code.empty() || !t.syncs.empty()) t.streams.push_back("main");
      t.stream_of.assign(prog_.code.size(), 0);
    }
    auto it = std::find(t.streams.begin(), t.streams.end(), name);
    if (it == t.streams.end()) {
      if (t.streams.size() >= 256) c.fail("more than 256 streams");
      t.streams.push_back(name);
      it = t.streams.end() - 1;
    }
    current_stream_ = static_cast<std::uint16_t>(it - t.streams.begin());
  } else if (word == "barrier") {
    // .barrier NAME [count=N]: N arrivals complete a phase (default 1).
    std::size_t at = (c.skip_space(), c.col());
    std::string name = barrier_name(c);
    std::int64_t count = 1;
    if (!c.done()) {
      std::size_t kat = (c.skip_space(), c.col());
      std::string key = c.ident("count=");
      if (key != "count") c.fail_at(kat, "unknown .barrier option '" + key + "' (count=)");
      c.expect('=', "'=' after count");
      std::size_t vat = (c.skip_space(), c.col());
      count = c.expr();
      if (count < 1 || count > 1024) c.fail_at(vat, "a barrier's count must be between 1 and 1024");
    }
    barrier_id(name, static_cast<std::uint32_t>(count), true, at, c);
  } else if (word == "wait_for") {
    // .wait_for R: the stream waits until the last write of R before this point is done, as a
    // kernel's wgmma.wait_group or TMA wait does for an asynchronous product or copy
    c.skip_space();
    if (!(c.peek() == 'R' || c.peek() == 'r')) c.fail("expected a register after .wait_for, such as R3 or R{k}");
    const int highest = prog_.highest_reg;  // a wait uses no register of its own
    const Operand o = reg_operand(c, false, nullptr);
    prog_.highest_reg = highest;
    if (t.syncs.size() >= (std::size_t{1} << 28)) c.fail_at(col, "more than 2^28 .arrive/.wait points");
    SyncPoint sp{prog_.code.size(), current_stream_, 0, true, SourceLoc{c.line(), static_cast<std::uint32_t>(col)}};
    sp.reg = o.reg;
    t.syncs.push_back(sp);
  } else if (word == "arrive" || word == "wait") {
    std::size_t at = (c.skip_space(), c.col());
    std::string name = barrier_name(c);
    std::uint16_t id = barrier_id(name, 1, false, at, c);
    if (t.syncs.size() >= (std::size_t{1} << 28)) c.fail_at(col, "more than 2^28 .arrive/.wait points");
    t.syncs.push_back(SyncPoint{prog_.code.size(), current_stream_, id, word == "wait",
                                SourceLoc{c.line(), static_cast<std::uint32_t>(col)}});
  } else {
    return false;
  }
  c.expect_end();
  return true;
}

std::int64_t Assembler::evaluate(std::uint32_t line, const std::vector<ExprOp>& code, LineTemplate::Expr e) {
  if (e.end == e.begin + 1) {  // a number or a name alone: most indices and registers
    const ExprOp& op = code[e.begin];
    if (op.kind == ExprOp::Kind::Const) return op.value;
    if (op.kind == ExprOp::Kind::Var) return loop_vars_[static_cast<std::size_t>(op.value)].second;
  }
  stack_.clear();
  for (std::uint32_t k = e.begin; k < e.end; ++k) {
    const ExprOp& op = code[k];
    if (op.kind == ExprOp::Kind::Const) {
      stack_.push_back(op.value);
      continue;
    }
    if (op.kind == ExprOp::Kind::Var) {
      stack_.push_back(loop_vars_[static_cast<std::size_t>(op.value)].second);
      continue;
    }
    const std::int64_t b = stack_.back();
    if (op.kind == ExprOp::Kind::Neg) stack_.back() = 0;  // 0 - b, in b's place
    else stack_.pop_back();
    std::int64_t& a = stack_.back();
    if (const char* error = apply(op.kind, a, b, a)) fail(line, op.col, error);
  }
  return stack_.back();
}

}  // namespace

Program assemble(std::string_view text, const std::string& file_name, const AssembleOptions& opts) {
  Assembler a(text, file_name, opts);
  return a.run();
}

std::string read_trace_file(const std::string& path) {
  // An ifstream opens a directory and reads nothing, which would read as an empty program.
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw AsmError(path, 0, 0, "is a directory, not a trace file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw AsmError(path, 0, 0, "cannot open file");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Program assemble_file(const std::string& path, const AssembleOptions& opts) {
  return assemble(read_trace_file(path), path, opts);
}

}  // namespace flashsim::isa
