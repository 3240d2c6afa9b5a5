#pragma once
/// Reads spoken English numbers from a word sequence with the tables of an itn_grammar: the
/// building blocks of the ITN rules (itn.cpp). Every reader starts at word `at` and returns what
/// it read and how many words it took, or nullopt. Stateless apart from the references it holds.

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "moe/postproc/grammar.hpp"

namespace sluice::moe::postproc {

struct read_number {
  int64_t value = 0;
  int words = 0;
};

struct read_digits {
  std::string digits;  ///< "0".."9" characters
  int words = 0;
};

class number_reader {
 public:
  number_reader(const itn_grammar& g, std::span<const std::string> words) : g_(g), w_(words) {}

  /// A [units] word (0 .. 19).
  std::optional<int64_t> unit(std::size_t at) const;
  /// A [scales] word's value.
  std::optional<int64_t> scale(std::size_t at) const;
  /// 0 .. 99: "seven", "seventeen", "seventy", "seventy seven".
  std::optional<read_number> below_100(std::size_t at) const;
  /// 0 .. 1999: below_100, or "[a|unit] hundred [and] [below_100]".
  std::optional<read_number> below_1000(std::size_t at) const;
  /// Any cardinal: chunks below 1000 with descending scales ("two million three thousand and five").
  std::optional<read_number> cardinal(std::size_t at) const;
  /// "first", "twenty first", "one hundredth".
  std::optional<read_number> ordinal(std::size_t at) const;
  /// A year read in halves: "nineteen ninety nine", "twenty twenty four", "nineteen oh five".
  std::optional<read_number> year(std::size_t at) const;
  /// One digit item: a single digit word, "oh", or "double"/"triple" + digit.
  std::optional<read_digits> digit_item(std::size_t at) const;
  /// "[cardinal] point digit..." -> "3.14" (a missing whole part is written 0).
  std::optional<read_digits> decimal(std::size_t at) const;

  std::size_t size() const { return w_.size(); }
  const std::string& word(std::size_t at) const { return w_[at]; }
  bool is(std::size_t at, std::string_view s) const { return at < w_.size() && w_[at] == s; }

 private:
  std::optional<int64_t> value_of(std::string_view table, std::size_t at) const;
  const itn_grammar& g_;
  std::span<const std::string> w_;
};

}  // namespace sluice::moe::postproc
