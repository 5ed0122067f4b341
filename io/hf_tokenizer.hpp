#pragma once
// The BPE tokenizer (io/bpe_tokenizer.hpp) as Hugging Face's `tokenizers`
// files, and back. The byte-level BPE convention of GPT-2: every byte is
// spelled by one printable character (bytes_to_unicode), a token by the
// characters of its bytes, merges as "LEFT RIGHT" in merge order; ids are
// wiola's (byte b = id b, the four specials 256..259 as added tokens, merge i
// = id 260 + i). The pieces of `wiola-words-1` become a Split pre-tokenizer
// (one regex), then ByteLevel, then a Split that cuts a piece at 64 bytes on
// a character boundary, so the same text gives the same ids. One difference
// stays: Hugging Face matches added tokens in the text (the text
// "<|endoftext|>" becomes id 256) unless told split_special_tokens=True;
// wiola never produces a special id from text.
#include <string>
#include <string_view>

#include "io/bpe_tokenizer.hpp"

namespace wiola {

// tokenizer.json. Throws wiola::Error when two ids spell the same bytes
// (a vocabulary Hugging Face cannot hold).
std::string hf_tokenizer_json(const BpeTokenizer& tok);
// tokenizer_config.json: PreTrainedTokenizerFast, <|endoftext|> as BOS and
// EOS, the other specials, model_max_length = context.
std::string hf_tokenizer_config_json(const BpeTokenizer& tok, int context);

// Reads a tokenizer.json written by hf_tokenizer_json (or any with the same
// normaliser, pre-tokenizer, byte mapping, specials and id layout) back into
// the BPE tokenizer; `where` names the file in errors.
BpeTokenizer bpe_from_hf_tokenizer_json(std::string_view text, const std::string& where);

// The Split regex of wiola-words-1 (Oniguruma syntax, as tokenizers uses).
std::string wiola_words_regex();

}  // namespace wiola
