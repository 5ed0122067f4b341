#include "io/hf_tokenizer.hpp"

#include <array>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "core/error.hpp"
#include "io/pretokenizer.hpp"

namespace wiola {

namespace {

using json = nlohmann::json;

// UTF-8 of one code point.
void put_utf8(std::string& out, char32_t c) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
}

// GPT-2's bytes_to_unicode: printable Latin-1 bytes spell themselves, the
// others (control bytes, space, 0x7F-0xA0, 0xAD) U+0100 onwards in byte order.
const std::array<char32_t, 256>& byte_chars() {
  static const std::array<char32_t, 256> table = [] {
    std::array<char32_t, 256> t{};
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
      t[b] = printable ? char32_t(b) : next++;
    }
    return t;
  }();
  return table;
}

std::string spell(std::string_view bytes) {
  std::string out;
  for (unsigned char b : bytes) put_utf8(out, byte_chars()[b]);
  return out;
}

std::string hex_char(char32_t c) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "\\x{%X}", static_cast<unsigned>(c));
  return buf;
}

// After ByteLevel every character is one byte: at most kMaxPieceBytes of them,
// and never stopping before a UTF-8 continuation byte (0x80-0xBF).
std::string cut_regex() {
  std::string cont;
  for (int b = 0x80; b <= 0xBF; ++b) cont += hex_char(byte_chars()[b]);
  return ".{1," + std::to_string(kMaxPieceBytes) + "}(?![" + cont + "])";
}

json split(const std::string& regex) {
  return {{"type", "Split"}, {"pattern", {{"Regex", regex}}}, {"behavior", "Isolated"}, {"invert", false}};
}

json byte_level() {
  return {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true},
          {"use_regex", false}};
}

json pre_tokenizer() {
  return {{"type", "Sequence"},
          {"pretokenizers", json::array({split(wiola_words_regex()), byte_level(), split(cut_regex())})}};
}

json added_token(std::int32_t id, std::string_view text) {
  return {{"id", id},         {"content", text}, {"single_word", false}, {"lstrip", false},
          {"rstrip", false},  {"normalized", false}, {"special", true}};
}

}  // namespace

std::string wiola_words_regex() {
  // An optional space, then letters (L and M), at most 3 digits, or other
  // characters; else white space, leaving a final space that precedes a
  // non-space to the next piece (pretokenizer.hpp).
  return R"( ?[\p{L}\p{M}]+| ?\p{N}{1,3}| ?[^\s\p{L}\p{M}\p{N}]+|\s+(?= \S)|\s+)";
}

std::string hf_tokenizer_json(const BpeTokenizer& tok) {
  json vocab = json::object();
  std::unordered_map<std::string, std::int32_t> seen;
  json added = json::array();
  for (std::int32_t id = 0; id < tok.vocab_size(); ++id) {
    const bool special = id >= BpeTokenizer::kEod && id < BpeTokenizer::kFirstMerge;
    const std::string text = special ? tok.token_bytes(id) : spell(tok.token_bytes(id));
    const auto [it, fresh] = seen.emplace(text, id);
    require(fresh, "tokenizer.json: ids ", it->second, " and ", id, " both spell '", text,
            "'; Hugging Face's BPE holds one id per string");
    vocab[text] = id;
    if (special) added.push_back(added_token(id, text));
  }
  json merges = json::array();
  for (const BpeMerge& m : tok.merges())
    merges.push_back(spell(tok.token_bytes(m.left)) + " " + spell(tok.token_bytes(m.right)));
  json j;
  j["version"] = "1.0";
  j["truncation"] = nullptr;
  j["padding"] = nullptr;
  j["added_tokens"] = added;
  j["normalizer"] = {{"type", "NFC"}};
  j["pre_tokenizer"] = pre_tokenizer();
  j["post_processor"] = nullptr;
  j["decoder"] = byte_level();
  j["model"] = {{"type", "BPE"},          {"dropout", nullptr},         {"unk_token", nullptr},
                {"continuing_subword_prefix", nullptr}, {"end_of_word_suffix", nullptr},
                {"fuse_unk", false},      {"byte_fallback", false},     {"ignore_merges", false},
                {"vocab", vocab},         {"merges", merges}};
  return j.dump(1) + "\n";
}

std::string hf_tokenizer_config_json(const BpeTokenizer& tok, int context) {
  (void)tok;
  const std::string eod(BpeTokenizer::kSpecials[0]);
  json decoder = json::object();
  json extra = json::array();
  for (std::size_t i = 0; i < BpeTokenizer::kSpecials.size(); ++i) {
    const std::int32_t id = BpeTokenizer::kEod + static_cast<std::int32_t>(i);
    json t = added_token(id, BpeTokenizer::kSpecials[i]);
    t.erase("id");
    decoder[std::to_string(id)] = t;
    if (i > 0) extra.push_back(BpeTokenizer::kSpecials[i]);
  }
  const json j = {{"tokenizer_class", "PreTrainedTokenizerFast"},
                  {"bos_token", eod},
                  {"eos_token", eod},
                  {"unk_token", nullptr},
                  {"pad_token", nullptr},
                  {"additional_special_tokens", extra},
                  {"added_tokens_decoder", decoder},
                  {"add_bos_token", false},
                  {"add_eos_token", false},
                  {"clean_up_tokenization_spaces", false},
                  {"model_max_length", context}};
  return j.dump(1) + "\n";
}

BpeTokenizer bpe_from_hf_tokenizer_json(std::string_view text, const std::string& where) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    fail(where, ": not valid JSON (", e.what(), ")");
  }
  try {
    const json& model = j.at("model");
    require(model.at("type") == "BPE", where, ": model type ", model.at("type").dump(),
            " is not BPE");
    require(j.at("normalizer").value("type", "") == "NFC", where,
            ": the normaliser is not NFC (wiola's BPE normalises to NFC)");
    require(j.at("pre_tokenizer") == pre_tokenizer(), where,
            ": the pre-tokenizer is not wiola-words-1 with byte-level spelling "
            "(what wiola-reshard export-safetensors writes)");
    const json& vocab = model.at("vocab");
    const auto id_of = [&](const std::string& s) -> std::int32_t {
      const auto it = vocab.find(s);
      require(it != vocab.end(), where, ": '", s, "' is not in the vocabulary");
      return it->get<std::int32_t>();
    };
    for (int b = 0; b < 256; ++b)
      require(id_of(spell(std::string(1, static_cast<char>(b)))) == b, where, ": byte ", b,
              " is not id ", b);
    for (std::size_t i = 0; i < BpeTokenizer::kSpecials.size(); ++i)
      require(id_of(std::string(BpeTokenizer::kSpecials[i])) ==
                  BpeTokenizer::kEod + static_cast<std::int32_t>(i),
              where, ": ", BpeTokenizer::kSpecials[i], " is not id ",
              BpeTokenizer::kEod + static_cast<std::int32_t>(i));
    std::vector<BpeMerge> merges;
    const json& list = model.at("merges");
    for (std::size_t i = 0; i < list.size(); ++i) {
      std::string left, right;
      if (list[i].is_array()) {  // the newer [left, right] form
        left = list[i].at(0).get<std::string>();
        right = list[i].at(1).get<std::string>();
      } else {
        const std::string m = list[i].get<std::string>();
        const std::size_t sp = m.find(' ');
        require(sp != std::string::npos && m.find(' ', sp + 1) == std::string::npos, where,
                ": merge ", i, " '", m, "' is not 'LEFT RIGHT'");
        left = m.substr(0, sp);
        right = m.substr(sp + 1);
      }
      const std::int32_t made = id_of(left + right);
      require(made == BpeTokenizer::kFirstMerge + static_cast<std::int32_t>(i), where, ": merge ", i,
              " makes id ", made, ", expected ", BpeTokenizer::kFirstMerge + static_cast<std::int32_t>(i));
      merges.push_back({id_of(left), id_of(right)});
    }
    require(vocab.size() == BpeTokenizer::kFirstMerge + merges.size(), where, ": ", vocab.size(),
            " vocabulary entries for ", merges.size(), " merges (expected 260 + merges)");
    try {
      return BpeTokenizer(std::move(merges));
    } catch (const Error& e) {
      fail(where, ": ", e.what());
    }
  } catch (const json::exception& e) {
    fail(where, ": ", e.what());
  }
}

}  // namespace wiola
