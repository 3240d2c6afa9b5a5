#pragma once
/// A word-piece model's tokenizer: the model directory's SentencePiece model (pieces.model, made
/// by tools/train/pieces.py), read with Debian's libsentencepiece. It turns words into the
/// model's pieces for everything the engine spells itself (hotwords, lexicon words); the model's
/// output is read back through token_table (tokens.hpp), whose ids are the tokenizer's ids plus
/// one (id 0 is the CTC blank).
///
/// Pieces that begin a word start with U+2581 "▁", as SentencePiece writes them.
/// Read-only after loading; encode() may be called from several threads at once.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "config/error.hpp"

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace sluice::moe {

class piece_tokenizer {
 public:
  /// Reads a SentencePiece model file; errc::io when it cannot be read, errc::corrupt when it is
  /// not a SentencePiece model.
  static result<std::shared_ptr<const piece_tokenizer>> load(const std::string& path);
  /// The same from the file's bytes; `source` names it in messages.
  static result<std::shared_ptr<const piece_tokenizer>> parse(std::string_view bytes, const std::string& source);

  ~piece_tokenizer();
  piece_tokenizer(const piece_tokenizer&) = delete;
  piece_tokenizer& operator=(const piece_tokenizer&) = delete;

  /// Number of pieces (the tokenizer's ids are 0 .. size() - 1).
  int32_t size() const;
  /// The piece of a tokenizer id, as the model file spells it ("▁the", "nk", "<unk>").
  std::string piece(int32_t id) const;
  /// The tokenizer's id of the unknown piece, or -1 when it has none.
  int32_t unk_id() const;
  /// `text` as tokenizer ids (a word-start piece for every word). errc::invalid_argument when the
  /// library refuses the text.
  result<std::vector<int32_t>> encode(std::string_view text) const;

 private:
  piece_tokenizer();
  std::unique_ptr<sentencepiece::SentencePieceProcessor> sp_;
};

}  // namespace sluice::moe
