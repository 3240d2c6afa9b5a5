// Word-piece vocabularies: the tokenizer (against python3-sentencepiece, the recipe's own), the
// loader's checks that tokens.txt belongs to the tokenizer, and every decoder on pieces, with
// expected results worked out by hand over tests/data/pieces (300 pieces of the recipe's text;
// tokens.txt there lists, e.g., "▁thank" at id 158, "s" at id 2).

#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "moe/acoustic_model.hpp"
#include "moe/decoder/beam_search_decoder.hpp"
#include "moe/decoder/context_graph.hpp"
#include "moe/decoder/greedy_decoder.hpp"
#include "moe/decoder/lexicon_decoder.hpp"
#include "moe/decoder/word_lexicon.hpp"
#include "moe/piece_tokenizer.hpp"
#include "moe/tokens.hpp"
#include "tests/common/audio_tools.hpp"
#include "tests/moe/decoder_test_util.hpp"

using namespace sluice;
using namespace sluice::moe;
using sluice::moe::test::parse_lm;

namespace {

const std::string pieces_dir = SLUICE_TEST_DATA_DIR "/pieces";

const token_table& piece_tokens() {
  static const token_table t = [] {
    auto table = token_table::load(pieces_dir + "/tokens.txt");
    REQUIRE_MESSAGE(table.has_value(), table.error().message);
    auto tokenizer = piece_tokenizer::load(pieces_dir + "/pieces.model");
    REQUIRE_MESSAGE(tokenizer.has_value(), tokenizer.error().message);
    auto ok = table->attach_tokenizer(*tokenizer, pieces_dir);
    REQUIRE_MESSAGE(ok.has_value(), ok.error().message);
    return *table;
  }();
  return t;
}

int32_t piece(std::string_view p) {
  const int32_t id = piece_tokens().id_of(p);
  REQUIRE_MESSAGE(id > 0, "no piece " << p);
  return id;
}

// One frame: the listed pieces ("_" is the blank) get their probabilities, the rest of the mass
// is shared evenly by the other tokens; logits are ln of those probabilities.
using frame = std::vector<std::pair<std::string, float>>;
constexpr float peak = 0.9f;

std::vector<float> logits_of(const std::vector<frame>& frames) {
  const token_table& t = piece_tokens();
  const auto v = static_cast<std::size_t>(t.size());
  std::vector<float> out;
  for (const frame& f : frames) {
    std::vector<float> p(v, -1.0f);
    float listed = 0;
    for (const auto& [name, prob] : f) {
      p[static_cast<std::size_t>(name == "_" ? t.blank_id() : piece(name))] = prob;
      listed += prob;
    }
    const float rest = (1.0f - listed) / static_cast<float>(v - f.size());
    for (float x : p) out.push_back(std::log(x < 0 ? rest : x));
  }
  return out;
}

// One peaky frame per name.
std::vector<frame> peaky(const std::vector<std::string>& names) {
  std::vector<frame> frames;
  for (const auto& n : names) frames.push_back({{n, peak}});
  return frames;
}

int32_t n_frames(const std::vector<float>& logits) {
  return static_cast<int32_t>(logits.size() / static_cast<std::size_t>(piece_tokens().size()));
}

word_lexicon lexicon_of(const std::vector<std::string>& words, const arpa_lm* lm = nullptr) {
  return word_lexicon::build(piece_tokens(), lm, words, /*with_lm_unigrams=*/false);
}

decode_result lexicon_decode(const std::vector<float>& logits, const word_lexicon& lex, const arpa_lm* lm = nullptr,
                             context_graph hotwords = {}, const word_lexicon* extra = nullptr,
                             const decoder_options& o = {}) {
  auto dec = lexicon_decoder::create(piece_tokens(), o, lexicon_view(&lex, extra), lm, std::move(hotwords));
  REQUIRE_MESSAGE(dec.has_value(), dec.error().message);
  auto ok = dec->accept(logits, n_frames(logits));
  REQUIRE_MESSAGE(ok.has_value(), ok.error().message);
  return dec->finalize();
}

std::string greedy_text(const std::vector<float>& logits) {
  auto r = greedy_decode(logits, n_frames(logits), piece_tokens(), {});
  REQUIRE(r.has_value());
  return r->text;
}

// "i call" and "my card" are likely bigrams; every other pair backs off to equal unigrams.
const char* call_card_arpa = R"(\data\
ngram 1=7
ngram 2=2

\1-grams:
-1.0	</s>
-99	<s>	0
-2.0	<unk>
-1.0	i	0
-1.0	my	0
-1.0	call	0
-1.0	card	0

\2-grams:
-0.1	i call
-0.1	my card

\end\
)";

// `first` then one frame torn evenly between "▁call" and "▁card": the audio cannot tell them apart.
std::vector<float> call_or_card(const std::string& first) {
  auto frames = peaky({"_", first, "_"});
  frames.push_back({{"▁call", 0.45f}, {"▁card", 0.45f}});
  frames.push_back({{"_", peak}});
  return logits_of(frames);
}

}  // namespace

TEST_SUITE("pieces") {
  TEST_CASE("pieces: the tokenizer splits text as python3-sentencepiece does, and the pieces read back") {
    const token_table& t = piece_tokens();
    CHECK(t.pieces());
    CHECK(t.space_id() == -1);
    CHECK(t.size() == 301);
    // The unknown piece spells nothing (the recipe's decode drops it too); no id is a space.
    CHECK(t.text(t.id_of("<unk>")).empty());
    CHECK(t.text(-1).empty());
    // Recipe sentences and words the recipe never had, spelled from smaller pieces.
    const std::vector<std::string> texts{"thank you for calling", "my card number is four two",
                                         "xylophone quizzically zorg", "it's ok", "a"};
    sluice::test::temp_dir dir;
    const std::string out = dir.file("ids.txt");
    std::string script = "import sentencepiece as s\np=s.SentencePieceProcessor(model_file='" + pieces_dir +
                         "/pieces.model')\nfor t in [";
    for (const auto& x : texts) script += "'''" + x + "''',";
    script += "]: print(' '.join(str(i + 1) for i in p.encode(t)), file=f)\n";
    std::ofstream(dir.file("ref.py")) << "f = open('" + out + "', 'w')\n" + script + "f.close()\n";
    REQUIRE_MESSAGE(sluice::test::run("/usr/bin/python3 " + dir.file("ref.py")) == 0,
                    "python3-sentencepiece (tools/setup.sh installs it) must run");
    std::istringstream ref(sluice::test::read_text(out));
    for (const auto& x : texts) {
      std::string line;
      REQUIRE(std::getline(ref, line));
      std::vector<int32_t> want;
      std::istringstream ids(line);
      for (int32_t id; ids >> id;) want.push_back(id);
      auto got = t.encode(x);
      REQUIRE_MESSAGE(got.has_value(), got.error().message);
      CHECK_MESSAGE(*got == want, x);
      // Round trip: every word starts with a word-start piece, the pieces spell the text.
      std::string back;
      for (int32_t id : *got) {
        if (t.starts_word(id) && !back.empty()) back += ' ';
        back += t.text(id);
      }
      CHECK(back == x);
      CHECK(t.starts_word(got->front()));
    }
    // A word is spelled lowercased when a piece for its capitals is missing; a letter no piece
    // has is an error naming the word.
    CHECK(t.spell_word("Call").value() == std::vector<int32_t>{piece("▁call")});
    auto bad = t.spell_word("na\xc3\xafve");
    REQUIRE(!bad.has_value());
    CHECK(bad.error().message.find("naïve") != std::string::npos);
    CHECK(!t.spell_word("two words").has_value());
  }

  TEST_CASE("pieces: a tokens file that does not belong to the tokenizer is refused") {
    auto tokenizer = piece_tokenizer::load(pieces_dir + "/pieces.model");
    REQUIRE(tokenizer.has_value());
    const std::string text = sluice::test::read_text(pieces_dir + "/tokens.txt");
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string l; std::getline(in, l);) lines.push_back(l);
    auto attach = [&](const std::vector<std::string>& ls) {
      std::string joined;
      for (const auto& l : ls) joined += l + "\n";
      auto t = token_table::parse(joined, "tokens.txt");
      REQUIRE(t.has_value());
      return t->attach_tokenizer(*tokenizer, "dir");
    };
    CHECK(attach(lines).has_value());
    auto swapped = lines;
    std::swap(swapped[10], swapped[11]);
    auto r = attach(swapped);
    REQUIRE(!r.has_value());
    CHECK(r.error().message.find("token 10 is '" + lines[11] + "'") != std::string::npos);
    CHECK(r.error().message.find("does not belong to this tokenizer") != std::string::npos);
    auto short_by_one = lines;
    short_by_one.pop_back();
    r = attach(short_by_one);
    REQUIRE(!r.has_value());
    CHECK(r.error().message.find("has 300 tokens, the tokenizer has 300 pieces") != std::string::npos);
    // The recipe's character tokens are not these pieces.
    auto chars = token_table::load(SLUICE_SOURCE_DIR "/tools/train/tokens.txt");
    REQUIRE(chars.has_value());
    CHECK(!chars->attach_tokenizer(*tokenizer, "dir").has_value());
    CHECK(!piece_tokenizer::parse("not a model", "x.model").has_value());
  }

  TEST_CASE("pieces: the model loader checks units, tokenizer and tokens together") {
    sluice::test::temp_dir dir;
    std::filesystem::path d(dir.file(""));
    std::string manifest = sluice::test::read_text(SLUICE_SOURCE_DIR "/models/default/model.json");
    const auto vocab = manifest.find("\"vocab_size\": 29");
    REQUIRE(vocab != std::string::npos);
    manifest.replace(vocab, 16, "\"vocab_size\": 301");
    // The default model says "units": "chars"; each case below says what it needs instead.
    const auto units = manifest.find("\"units\": \"chars\",");
    REQUIRE(units != std::string::npos);
    manifest.erase(units, 18);
    auto write_manifest = [&](const std::string& extra) {
      std::string m = manifest;
      m.insert(m.find('{') + 1, extra);
      std::ofstream(d / "model.json") << m;
    };
    std::filesystem::copy_file(pieces_dir + "/pieces.model", d / "pieces.model");
    std::filesystem::copy_file(pieces_dir + "/tokens.txt", d / "tokens.txt");
    auto message = [&] {
      auto m = load_model(d.string());
      REQUIRE(!m.has_value());  // no weights in this directory: the loader stops at them at the latest
      return m.error().message;
    };
    // Tokens and tokenizer agree: the loader goes on to the weights (absent here).
    write_manifest(R"("units": "pieces", "tokenizer": "pieces.model",)");
    CHECK(message().find("weights.safetensors") != std::string::npos);
    // Word pieces without saying so.
    write_manifest("");
    CHECK(message().find("lists word pieces") != std::string::npos);
    write_manifest(R"("units": "pieces",)");
    CHECK(message().find("needs \"tokenizer\"") != std::string::npos);
    write_manifest(R"("units": "letters", "tokenizer": "pieces.model",)");
    CHECK(message().find("units \"letters\"") != std::string::npos);
    // A tokens file of another vocabulary.
    write_manifest(R"("units": "pieces", "tokenizer": "pieces.model",)");
    std::filesystem::copy_file(SLUICE_SOURCE_DIR "/tools/train/tokens.txt", d / "tokens.txt",
                               std::filesystem::copy_options::overwrite_existing);
    CHECK(message().find("the tokens file has 29 tokens, the tokenizer has 300 pieces") != std::string::npos);
  }

  TEST_CASE("pieces: greedy decoding starts a word at each word-start piece, with its times") {
    // ▁thank _ s _ ▁you _ at 40 ms a frame: "thanks" spans frames 0-2, "you" frame 4.
    const auto logits = logits_of(peaky({"▁thank", "_", "s", "_", "▁you", "_"}));
    auto r = greedy_decode(logits, n_frames(logits), piece_tokens(), {});
    REQUIRE(r.has_value());
    CHECK(r->text == "thanks you");
    REQUIRE(r->words.size() == 2);
    CHECK(r->words[0].word == "thanks");
    CHECK(r->words[0].start_ms == 0);
    CHECK(r->words[0].end_ms == 120);
    CHECK(r->words[1].word == "you");
    CHECK(r->words[1].start_ms == 160);
    CHECK(r->words[1].end_ms == 200);
    for (const auto& w : r->words) CHECK(w.confidence == doctest::Approx(peak).epsilon(1e-5));
    CHECK(r->tokens == std::vector<int32_t>{piece("▁thank"), piece("s"), piece("▁you")});
  }

  TEST_CASE("pieces: beam search scores a word with the LM when the next word-start piece begins") {
    const auto lm = parse_lm(call_card_arpa);
    decoder_options o;
    o.lm_weight = 1.0;
    auto beam = [&](const std::vector<float>& logits) {
      auto dec = beam_search_decoder::create(piece_tokens(), o, &lm);
      REQUIRE(dec.has_value());
      REQUIRE(dec->accept(logits, n_frames(logits)).has_value());
      return dec->finalize().text;
    };
    // The torn word is closed at the end of the utterance...
    CHECK(beam(call_or_card("▁i")) == "i call");
    CHECK(beam(call_or_card("▁my")) == "my card");
    // ...or by the next word's first piece; the LM's bigrams still decide.
    auto frames = peaky({"_", "▁my", "_"});
    frames.push_back({{"▁call", 0.45f}, {"▁card", 0.45f}});
    for (const auto& f : peaky({"_", "▁i", "_"})) frames.push_back(f);
    CHECK(beam(logits_of(frames)) == "my card i");
  }

  TEST_CASE("pieces: the lexicon decoder keeps the model's word marks and spells only vocabulary words") {
    const auto lex = lexicon_of({"thank", "thanks", "you"});
    CHECK(lex.words() == 3);
    // "thanks" is ▁thank + s in this vocabulary.
    CHECK(lexicon_decode(logits_of(peaky({"▁thank", "_", "s", "_", "▁you"})), lex).text == "thanks you");
    CHECK(lexicon_decode(logits_of(peaky({"▁thank", "_", "▁you"})), lex).text == "thank you");
    // Pieces that only continue words cannot begin the utterance: greedy spells them, the lexicon
    // decoder cannot. With a cheap OOV path (0 + 0.5 per piece) the three pieces, each ln(9) = 2.2
    // above the blank, would come out as an OOV word; reading the first frame as some word-start
    // piece instead costs ln(0.0999 / (0.0001 / 299)) = 12.6 and is not worth it.
    std::vector<frame> frames;
    for (const char* p : {"s", "ing", "ed"}) {
      frames.push_back({{p, 0.9f}, {"_", 0.0999f}});
      frames.push_back({{"_", 0.9999f}});
    }
    frames.push_back({{"▁you", 0.9f}, {"_", 0.0999f}});
    const auto stray = logits_of(frames);
    CHECK(greedy_text(stray) == "singed you");
    decoder_options cheap_oov;
    cheap_oov.oov_penalty = 0;
    cheap_oov.oov_letter_penalty = 0.5;
    CHECK(lexicon_decode(stray, lex, nullptr, {}, nullptr, cheap_oov).text == "you");
  }

  TEST_CASE("pieces: the word LM decides between two piece words the audio cannot tell apart") {
    const auto lm = parse_lm(call_card_arpa);
    const auto lex = lexicon_of({"i", "my", "call", "card"}, &lm);
    CHECK(lexicon_decode(call_or_card("▁i"), lex, &lm).text == "i call");
    CHECK(lexicon_decode(call_or_card("▁my"), lex, &lm).text == "my card");
  }

  TEST_CASE("pieces: a clearly spelled unknown word comes out through the OOV path, a weak one does not") {
    const auto lex = lexicon_of({"my", "name", "is"});
    // "zorg" is ▁ z or g. Dropping its four pieces would cost 4 * ln(0.9 / (0.1 / 300)) = 32 in ln,
    // more than oov_penalty + 4 * oov_letter_penalty = 14.
    const std::vector<std::string> sentence{"▁my", "_", "▁name", "_", "▁is", "_"};
    auto clear = sentence;
    for (const char* p : {"▁", "_", "z", "_", "or", "_", "g", "_"}) clear.push_back(p);
    CHECK(lexicon_decode(logits_of(peaky(clear)), lex).text == "my name is zorg");
    // Each zorg piece 0.5 against blank 0.4: worth 4 * ln(0.5 / 0.4) = 0.9, less than the penalty.
    auto frames = peaky(sentence);
    for (const char* p : {"▁", "z", "or", "g"}) frames.push_back({{p, 0.5f}, {"_", 0.4f}});
    const auto weak = logits_of(frames);
    REQUIRE(greedy_text(weak) == "my name is zorg");
    CHECK(lexicon_decode(weak, lex).text == "my name is");
  }

  TEST_CASE("pieces: a hotword is spelled in pieces and wins only with biasing") {
    // "carl" is ▁c ar l, "cart" ▁c ar t; the torn last frame leans to t (0.5) over l (0.4), so
    // "cart" wins by ln(0.5 / 0.4) unless "carl" is biased.
    auto frames = peaky({"▁my", "_", "▁name", "_", "▁is", "_", "▁c", "_", "ar", "_"});
    frames.push_back({{"t", 0.5f}, {"l", 0.4f}});
    frames.push_back({{"_", peak}});
    const auto logits = logits_of(frames);
    const auto base = lexicon_of({"my", "name", "is", "cart"});
    const auto request = lexicon_of({"carl"});
    const std::vector<hotword> carl{{"Carl", 3.0f}};  // capitals: spelled lowercased
    auto graph = context_graph::build(carl, piece_tokens());
    REQUIRE_MESSAGE(graph.has_value(), graph.error().message);
    CHECK(lexicon_decode(logits, base, nullptr, {}, &request).text == "my name is cart");
    CHECK(lexicon_decode(logits, base, nullptr, *graph, &request).text == "my name is carl");
    const std::vector<hotword> unknown{{"na\xc3\xafve", 3.0f}};
    auto refused = context_graph::build(unknown, piece_tokens());
    REQUIRE(!refused.has_value());
    CHECK(refused.error().message.find("hotword 'naïve'") != std::string::npos);
  }
}
