#include "net/sip/jitter_buffer.hpp"

#include <algorithm>
#include <limits>

namespace sluice::net::sip {

namespace {
// A sequence number this far from the expected one is not reordering but a sender that
// restarted (RFC 3550 A.1 uses 3000 for MAX_DROPOUT).
constexpr int64_t max_dropout = 3000;
constexpr int64_t ms_per_s = 1000;
}  // namespace

jitter_buffer::jitter_buffer(jitter_buffer_config cfg) : cfg_(cfg) {}

int64_t jitter_buffer::extend(uint16_t seq) const {
  // The nearest extended number with these low 16 bits, relative to the next one expected.
  const auto delta = static_cast<int16_t>(static_cast<uint16_t>(seq - static_cast<uint16_t>(next_)));
  return next_ + delta;
}

void jitter_buffer::push(const rtp_packet& p, uint32_t duration, int64_t now_ms) {
  ++stats_.received;
  if (!started_ || p.ssrc != ssrc_) {
    if (started_) {
      ++stats_.resyncs;
      drain_all(pending_);
      have_expected_ts_ = false;
    }
    started_ = true;
    ssrc_ = p.ssrc;
    next_ = newest_ = p.seq;
  }
  int64_t ext = extend(p.seq);
  if (ext - next_ > max_dropout || next_ - ext > max_dropout) {
    ++stats_.resyncs;
    drain_all(pending_);
    have_expected_ts_ = false;
    next_ = newest_ = ext = p.seq;
  }
  if (ext < next_) {
    ++stats_.late;  // its slot was released or given up already (or it is a late duplicate)
    return;
  }
  if (held_.count(ext)) {
    ++stats_.duplicates;
    return;
  }
  if (ext < newest_) ++stats_.reordered;
  newest_ = std::max(newest_, ext);
  held_packet h;
  h.arrival_ms = now_ms;
  h.item.what = playout_item::kind::packet;
  h.item.payload_type = p.payload_type;
  h.item.marker = p.marker;
  h.item.timestamp = p.timestamp;
  h.item.duration = duration;
  h.item.seq = p.seq;
  h.item.payload.assign(p.payload.begin(), p.payload.end());
  held_.emplace(ext, std::move(h));
}

void jitter_buffer::release(held_packet&& h, int64_t now_ms, std::vector<playout_item>& out) {
  auto& it = h.item;
  if (it.duration > 0) {
    if (have_expected_ts_) {
      // A forward timestamp gap without a missing packet: the sender stopped sending (DTX,
      // an RFC 4733 event in between). Filled with silence when short enough to be a pause.
      const auto gap = static_cast<int32_t>(it.timestamp - expected_ts_);
      const int64_t max_fill = static_cast<int64_t>(cfg_.max_fill_ms) * cfg_.clock_rate / ms_per_s;
      if (gap > 0 && gap <= max_fill) {
        playout_item s;
        s.what = playout_item::kind::silence;
        s.timestamp = expected_ts_;
        s.duration = static_cast<uint32_t>(gap);
        out.push_back(std::move(s));
      }
    }
    have_expected_ts_ = true;
    expected_ts_ = it.timestamp + it.duration;
    last_duration_ = it.duration;
  }
  if (now_ms >= h.arrival_ms) stats_.max_hold_ms = std::max(stats_.max_hold_ms, now_ms - h.arrival_ms);
  ++stats_.released;
  out.push_back(std::move(it));
}

void jitter_buffer::give_up_gap(std::vector<playout_item>& out) {
  auto first = held_.begin();
  const int64_t missing = first->first - next_;
  stats_.lost += static_cast<uint64_t>(missing);
  // The gap's length: from where the audio should go on to where the next packet starts;
  // without a timestamp to go by, the missing packets are taken to be as long as the last.
  const int64_t max_fill = static_cast<int64_t>(cfg_.max_fill_ms) * cfg_.clock_rate / ms_per_s;
  int64_t length = 0;
  if (have_expected_ts_) length = static_cast<int32_t>(first->second.item.timestamp - expected_ts_);
  else length = missing * last_duration_;
  if (length > 0 && length <= max_fill) {
    playout_item l;
    l.what = playout_item::kind::lost;
    l.timestamp = have_expected_ts_ ? expected_ts_ : 0;
    l.duration = static_cast<uint32_t>(length);
    out.push_back(std::move(l));
    if (have_expected_ts_) expected_ts_ += static_cast<uint32_t>(length);
  }
  next_ = first->first;
}

void jitter_buffer::drain_all(std::vector<playout_item>& out) {
  while (!held_.empty()) {
    if (held_.begin()->first != next_) give_up_gap(out);
    auto node = held_.extract(held_.begin());
    release(std::move(node.mapped()), std::numeric_limits<int64_t>::min(), out);
    ++next_;
  }
}

std::vector<playout_item> jitter_buffer::pop(int64_t now_ms) {
  std::vector<playout_item> out = std::move(pending_);
  pending_.clear();
  while (!held_.empty()) {
    auto first = held_.begin();
    if (first->first == next_) {
      auto node = held_.extract(first);
      release(std::move(node.mapped()), now_ms, out);
      ++next_;
      continue;
    }
    const bool waited_enough = now_ms >= give_up_at_ms();
    const bool too_many = held_.size() > static_cast<std::size_t>(cfg_.max_packets);
    if (!waited_enough && !too_many) break;
    give_up_gap(out);
  }
  return out;
}

int64_t jitter_buffer::give_up_at_ms() const {
  if (held_.empty()) return -1;
  int64_t oldest = std::numeric_limits<int64_t>::max();
  for (const auto& [seq, h] : held_) oldest = std::min(oldest, h.arrival_ms);
  return oldest + cfg_.max_delay_ms;
}

std::vector<playout_item> jitter_buffer::flush() {
  std::vector<playout_item> out = std::move(pending_);
  pending_.clear();
  drain_all(out);
  return out;
}

}  // namespace sluice::net::sip
