#include "moe/piece_tokenizer.hpp"

#include <sentencepiece_processor.h>

#include <fstream>
#include <sstream>

namespace sluice::moe {

piece_tokenizer::piece_tokenizer() : sp_(std::make_unique<sentencepiece::SentencePieceProcessor>()) {}

piece_tokenizer::~piece_tokenizer() = default;

result<std::shared_ptr<const piece_tokenizer>> piece_tokenizer::load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail(errc::io, "cannot open " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return parse(ss.str(), path);
}

result<std::shared_ptr<const piece_tokenizer>> piece_tokenizer::parse(std::string_view bytes, const std::string& source) {
  std::shared_ptr<piece_tokenizer> t(new piece_tokenizer());
  // The library reports a bad file through its status; it does not throw.
  const auto status = t->sp_->LoadFromSerializedProto(bytes);
  if (!status.ok())
    return fail(errc::corrupt, source + ": not a SentencePiece model (" + status.ToString() + ")");
  if (t->sp_->GetPieceSize() <= 0) return fail(errc::corrupt, source + ": the SentencePiece model has no pieces");
  return std::shared_ptr<const piece_tokenizer>(std::move(t));
}

int32_t piece_tokenizer::size() const { return sp_->GetPieceSize(); }

std::string piece_tokenizer::piece(int32_t id) const {
  if (id < 0 || id >= size()) return {};
  return sp_->IdToPiece(id);
}

int32_t piece_tokenizer::unk_id() const {
  const int id = sp_->unk_id();
  return id >= 0 && id < size() && sp_->IsUnknown(id) ? id : -1;
}

result<std::vector<int32_t>> piece_tokenizer::encode(std::string_view text) const {
  std::vector<int> ids;
  const auto status = sp_->Encode(text, &ids);
  if (!status.ok()) return fail(errc::invalid_argument, "cannot split '" + std::string(text) + "' into pieces: " + status.ToString());
  return std::vector<int32_t>(ids.begin(), ids.end());
}

}  // namespace sluice::moe
