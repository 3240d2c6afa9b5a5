#pragma once
/// lane_set: where a channel sends each new utterance. One per engine, shared by the supervisor
/// (which owns the compute actors and puts a restarted one in its slot) and every channel (which
/// picks a slot per utterance). Per-utterance placement: an utterance goes to the lane with the
/// least work outstanding at the moment it starts, so a long call, or a file whose segments all
/// arrive at once, is spread over every lane rather than tied to the one its channel opened on.
///
/// Lanes of unequal speed (a plan over heterogeneous devices: moe/placement) get work in
/// proportion to their measured speed: an utterance goes where it would finish first, i.e. to
/// the least (outstanding work + its claim) / speed. On one CPU every lane has the same speed
/// and this is the least outstanding work.
///
/// Work outstanding on a lane, in 10 ms feature frames: what its channels have claimed and not
/// yet released. A channel claims `open_cost` when it places an utterance (so that utterances
/// started in the same instant see each other before any features go out), adds the frames it
/// sends, releases frames as their logits come back, and releases the rest when the utterance
/// ends (final, lost, or the channel stopping). The figure is approximate by design (claims from
/// different threads race harmlessly); it never goes negative when every claim is released once.
///
/// In batcher mode (no lanes) the set has one slot: the batcher.
/// Thread-safe: loads are atomics, the handles are read and replaced under a mutex.

#include <caf/all.hpp>

#include "actors/actor_types.hpp"

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace sluice::actors {

class lane_set {
 public:
  /// Frames an open utterance counts for before its features are sent: one second of audio.
  static constexpr int64_t open_cost = 100;

  /// A set of `lanes` slots, all empty until set(). `decodes`: the slots are lanes that decode
  /// the offline utterances handed to them with their decoder ([engine] lane_decoding).
  /// `speeds`: each slot's expected frames/s (the placement plan's lanes); all equal when it is
  /// empty, of another size, or holds a value that is not positive and finite.
  explicit lane_set(std::size_t lanes, bool decodes = false, std::vector<double> speeds = {});
  /// A set of one slot holding `compute` (tests, batcher mode).
  static std::shared_ptr<lane_set> of(compute_actor_type compute);

  struct placement {
    std::size_t index = 0;
    compute_actor_type lane;
  };
  /// The slot where `frames` more would finish first, (load + frames) / speed (the lowest index
  /// on a tie), with `frames` claimed on it at once.
  placement place(int64_t frames);
  /// Frames claimed on (+) or released from (-) slot `index`.
  void add(std::size_t index, int64_t frames);

  /// Puts `compute` in slot `index` (spawn and restart); false when there is no such slot.
  bool set(std::size_t index, compute_actor_type compute);
  compute_actor_type at(std::size_t index) const;
  std::size_t size() const { return n_; }
  /// Whether a channel hands its offline utterances' decoders over (feature_chunk::decoder).
  bool decodes() const { return decodes_; }
  /// Outstanding work on slot `index` now, in frames.
  int64_t load(std::size_t index) const;
  /// Slot `index`'s speed relative to the fastest slot (1: the fastest, or every slot equal).
  double speed(std::size_t index) const { return index < n_ ? speed_[index] : 0.0; }

 private:
  std::size_t n_;
  bool decodes_;
  std::vector<double> speed_;  // [n_], fastest 1
  std::unique_ptr<std::atomic<int64_t>[]> load_;
  mutable std::mutex mu_;
  std::vector<compute_actor_type> lanes_;
};

}  // namespace sluice::actors
