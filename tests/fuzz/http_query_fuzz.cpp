// libFuzzer target: net/http_query.hpp (the query string of a request target),
// net/protocols/deepgram_query.hpp (a Deepgram live request's options) and net/multipart.hpp
// (the file part of a multipart/form-data upload).
// Input layout: the first line is the request target / Content-Type, the rest the body.
// Beyond "no crash": accepted keys and values are valid UTF-8; query_int's result lies in its
// range; Deepgram options that parse are in their ranges, their hotwords valid UTF-8; a multipart part is a piece of the body, never more bytes than the body holds.

#include <cstddef>
#include <cstdint>
#include <string>

#include "net/http_query.hpp"
#include "net/json_fields.hpp"
#include "net/multipart.hpp"
#include "net/protocols/deepgram_query.hpp"
#include "tests/fuzz/fuzz_checks.hpp"

using namespace sluice;

namespace {
constexpr int64_t lo = 1, hi = 192000;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  const auto nl = input.find('\n');
  const std::string head = input.substr(0, nl);
  const std::string body = nl == std::string::npos ? std::string() : input.substr(nl + 1);

  if (auto q = net::query_params(head)) {
    for (const auto& [k, v] : *q) {
      fuzz::require(net::valid_utf8(k) == k && net::valid_utf8(v) == v, "an accepted query key or value is not UTF-8");
      if (auto n = net::query_int(k, v, lo, hi)) fuzz::require(*n >= lo && *n <= hi, "query_int outside its range");
      else fuzz::require_message(n.error());
    }
  } else {
    fuzz::require_message(q.error());
  }

  for (const bool live : {true, false}) {
    if (auto dg = net::parse_deepgram_query(head, live)) {
      if (live) fuzz::require(!dg->encoding.empty(), "a live Deepgram stream without an encoding");
      else fuzz::require(dg->alternatives == 1, "a pre-recorded Deepgram request with alternatives");
      fuzz::require(dg->encoding == "linear16" || dg->encoding == "mulaw" || dg->encoding == "alaw" ||
                        (!live && dg->encoding.empty()),
                    "a Deepgram encoding sluice does not take");
      fuzz::require(dg->encoding.empty() ? dg->sample_rate == 0 : dg->sample_rate >= 8000 && dg->sample_rate <= 48000,
                    "a Deepgram sample_rate outside its range, or one without an encoding");
      fuzz::require(dg->channels == 1 || (dg->channels == 2 && (dg->multichannel || !live)),
                    "Deepgram channels without multichannel");
      fuzz::require(dg->alternatives >= 1 && dg->alternatives <= 20, "Deepgram alternatives outside its range");
      fuzz::require(dg->hotwords.size() <= 256, "more Deepgram keywords than the hotword limit");
      for (const auto& h : dg->hotwords) fuzz::require(net::valid_utf8(h) == h, "a Deepgram keyword is not UTF-8");
    } else {
      fuzz::require_message(dg.error());
    }
  }

  if (auto part = net::first_multipart_part(head, body)) {
    fuzz::require(part->size() < body.size(), "a multipart part is not smaller than the body");
    fuzz::require(body.find(*part) != std::string::npos, "a multipart part is not a piece of the body");
  }
  return 0;
}
