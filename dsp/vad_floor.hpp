#pragma once
/// The adaptive noise floor the VAD judges a band's frame energy against.
///
/// Minimum tracking in the dB domain: the floor falls quickly towards a quieter frame and rises
/// by a bounded slope (never above the frame) towards a louder one. It thus sits at the quiet
/// frames of the recent past: in steady noise, at the noise; in speech, at the pauses between
/// words. A louder noise is learnt at the rise rate, or at once when a whole relearn window
/// passes without a voiced frame: the floor then jumps to the quietest frame of that window.

#include <algorithm>
#include <cstdint>
#include <vector>

namespace sluice::dsp {

class vad_floor {
 public:
  /// Fraction of the gap to a quieter frame closed per frame: ~50 ms time constant at 10 ms
  /// frames, fast enough to find the noise in the pauses between words.
  static constexpr double fall_per_frame = 0.2;

  /// `rise_db_per_frame`: the most the floor rises per frame (dB). `relearn_frames`: unvoiced
  /// frames after which the floor jumps to their minimum (0 = never).
  vad_floor(double rise_db_per_frame, int64_t relearn_frames)
      : rise_db_per_frame_(rise_db_per_frame), recent_db_(static_cast<std::size_t>(relearn_frames)) {}

  /// False until the first frame has been taken in.
  bool seeded() const { return seeded_; }
  /// The floor (dB); the first frame's energy until there is more to go on.
  double value_db() const { return value_db_; }

  /// Takes in one frame's energy (dB). `rise_scale` in [0, 1] slows the rise (for frames that
  /// are probably speech); `voiced` frames restart the relearn window.
  void update(double energy_db, double rise_scale, bool voiced) {
    if (!seeded_) {
      value_db_ = energy_db;
      seeded_ = true;
    } else if (energy_db < value_db_) {
      value_db_ += fall_per_frame * (energy_db - value_db_);
    } else {
      value_db_ = std::min(energy_db, value_db_ + rise_db_per_frame_ * rise_scale);
    }
    if (recent_db_.empty()) return;
    recent_db_[static_cast<std::size_t>(frames_ % static_cast<int64_t>(recent_db_.size()))] =
        static_cast<float>(energy_db);
    ++frames_;
    unvoiced_run_ = voiced ? 0 : unvoiced_run_ + 1;
    if (unvoiced_run_ >= static_cast<int64_t>(recent_db_.size()))
      value_db_ = std::max(value_db_, static_cast<double>(*std::min_element(recent_db_.begin(), recent_db_.end())));
  }

  void reset() {
    seeded_ = false;
    value_db_ = 0;
    frames_ = 0;
    unvoiced_run_ = 0;
  }

 private:
  double rise_db_per_frame_ = 0;
  std::vector<float> recent_db_;  ///< ring [relearn_frames]: energy of the latest frames (dB)
  bool seeded_ = false;
  double value_db_ = 0;
  int64_t frames_ = 0;
  int64_t unvoiced_run_ = 0;      ///< frames since the last voiced one
};

}  // namespace sluice::dsp
