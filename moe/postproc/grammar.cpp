// Reads the ITN grammar. The format is deliberately line-based (not TOML): multi-word keys such
// as "a m" or "per cent" stay readable, and an error names the file and line.

#include "moe/postproc/grammar.hpp"

#include <array>
#include <charconv>
#include <fstream>
#include <sstream>

namespace sluice::moe::postproc {

namespace {

std::string_view trim(std::string_view s) {
  const auto a = s.find_first_not_of(" \t\r");
  if (a == std::string_view::npos) return {};
  const auto b = s.find_last_not_of(" \t\r");
  return s.substr(a, b - a + 1);
}

// Collapses runs of blanks to one space so "a  m" and "a m" are the same key.
std::string normalise_key(std::string_view s) {
  std::string out;
  bool blank = false;
  for (const char c : s) {
    if (c == ' ' || c == '\t') {
      blank = true;
      continue;
    }
    if (blank && !out.empty()) out += ' ';
    blank = false;
    out += c;
  }
  return out;
}

constexpr std::array<std::string_view, 8> k_required = {"settings", "units",    "tens",   "scales",
                                                        "ordinals", "currency", "months", "letters"};

}  // namespace

std::span<const std::string_view> itn_grammar::required_tables() { return k_required; }

result<itn_grammar> itn_grammar::parse(std::string_view text, std::string_view source) {
  itn_grammar g;
  std::string section;
  int line_no = 0;
  std::size_t pos = 0;
  auto where = [&] { return std::string(source) + ":" + std::to_string(line_no) + ": "; };
  while (pos <= text.size()) {
    auto nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    auto line = text.substr(pos, nl - pos);
    pos = nl + 1;
    ++line_no;
    if (const auto hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    line = trim(line);
    if (line.empty()) continue;
    if (line.front() == '[') {
      if (line.back() != ']' || line.size() < 3) return fail(errc::corrupt, where() + "bad section header");
      section = std::string(trim(line.substr(1, line.size() - 2)));
      g.tables_[section];
      continue;
    }
    if (section.empty()) return fail(errc::corrupt, where() + "an entry before any [section]");
    const auto eq = line.find('=');
    if (eq == std::string_view::npos) return fail(errc::corrupt, where() + "expected \"words = value\"");
    const auto key = normalise_key(trim(line.substr(0, eq)));
    const auto value = std::string(trim(line.substr(eq + 1)));
    if (key.empty() || value.empty()) return fail(errc::corrupt, where() + "empty key or value");
    for (const char c : key)
      if (c >= 'A' && c <= 'Z') return fail(errc::corrupt, where() + "keys are lower-case: \"" + key + "\"");
    if (section == "settings") {
      int64_t v = 0;
      const auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
      if (ec != std::errc{} || p != value.data() + value.size())
        return fail(errc::corrupt, where() + "setting " + key + " must be an integer, got \"" + value + "\"");
      g.settings_[key] = v;
    }
    auto& table = g.tables_[section];
    if (table.count(key)) return fail(errc::corrupt, where() + "duplicate key \"" + key + "\" in [" + section + "]");
    table.emplace(key, value);
    int words = 1;
    for (const char c : key) words += c == ' ' ? 1 : 0;
    g.max_key_words_ = std::max(g.max_key_words_, words);
  }
  for (const auto t : k_required)
    if (!g.tables_.count(t)) return fail(errc::corrupt, std::string(source) + ": missing section [" + std::string(t) + "]");
  return g;
}

result<itn_grammar> itn_grammar::load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail(errc::io, "itn grammar: cannot open " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return parse(ss.str(), path);
}

std::optional<table_match> itn_grammar::match(std::string_view table, std::span<const std::string> words,
                                              std::size_t at) const {
  const auto t = tables_.find(table);
  if (t == tables_.end() || at >= words.size()) return std::nullopt;
  std::string key;
  std::optional<table_match> best;
  for (int n = 1; n <= max_key_words_ && at + static_cast<std::size_t>(n) <= words.size(); ++n) {
    if (n > 1) key += ' ';
    key += words[at + static_cast<std::size_t>(n) - 1];
    if (const auto e = t->second.find(key); e != t->second.end()) best = table_match{e->second, n};
  }
  return best;
}

bool itn_grammar::has(std::string_view table, std::string_view word) const {
  const auto t = tables_.find(table);
  return t != tables_.end() && t->second.find(word) != t->second.end();
}

int64_t itn_grammar::setting(std::string_view key, int64_t fallback) const {
  const auto s = settings_.find(key);
  return s == settings_.end() ? fallback : s->second;
}

}  // namespace sluice::moe::postproc
