#pragma once
/// Splitting protocol text into its words (SDP's m= fields, a=crypto's parts).
#include <string_view>
#include <vector>

namespace sluice::net {

/// The non-empty runs of `text` between any of `separators` ("a  b" -> "a", "b").
inline std::vector<std::string_view> words(std::string_view text, std::string_view separators = " ") {
  std::vector<std::string_view> out;
  for (std::size_t pos = 0; pos < text.size();) {
    auto end = text.find_first_of(separators, pos);
    if (end == std::string_view::npos) end = text.size();
    if (end > pos) out.push_back(text.substr(pos, end - pos));
    pos = end + 1;
  }
  return out;
}

}  // namespace sluice::net
