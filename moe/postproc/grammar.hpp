#pragma once
/// The data an English inverse text normaliser reads (moe/postproc/data/en_itn.grammar): named
/// tables from spoken word sequences to values, and numeric settings. Loaded once at start and
/// then read-only (safe to share between threads).
///
/// File format: "[section]" starts a table; other lines are "spoken words = value"; '#' starts a
/// comment; blank lines are ignored. Keys are lower-case words separated by single spaces.

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "config/error.hpp"

namespace sluice::moe::postproc {

/// A match of a table key at a position of a word sequence.
struct table_match {
  std::string value;
  int words = 0;  ///< how many words the key spans (>= 1)
};

class itn_grammar {
 public:
  /// Parses grammar text; `source` names it in errors ("file:line: what").
  static result<itn_grammar> parse(std::string_view text, std::string_view source);
  /// Reads and parses the file at `path` (errc::io when it cannot be read).
  static result<itn_grammar> load(const std::string& path);

  /// The longest key of `table` that matches `words` from `at` on; nullopt when none does or
  /// the table does not exist.
  std::optional<table_match> match(std::string_view table, std::span<const std::string> words,
                                   std::size_t at) const;
  /// Whether `table` has the one-word key `word`.
  bool has(std::string_view table, std::string_view word) const;
  /// The value of [settings] `key`, or `fallback` when absent.
  int64_t setting(std::string_view key, int64_t fallback) const;
  /// Sections every rule needs; parse() fails when one is missing.
  static std::span<const std::string_view> required_tables();

 private:
  std::map<std::string, std::map<std::string, std::string, std::less<>>, std::less<>> tables_;
  std::map<std::string, int64_t, std::less<>> settings_;
  int max_key_words_ = 1;
};

}  // namespace sluice::moe::postproc
