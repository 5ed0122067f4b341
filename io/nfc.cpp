#include "io/nfc.hpp"

#include <unicode/bytestream.h>
#include <unicode/normalizer2.h>
#include <unicode/stringpiece.h>

#include "core/error.hpp"
#include "io/utf8.hpp"

namespace wiola {

namespace {

const icu::Normalizer2& nfc() {
  static const icu::Normalizer2* instance = [] {
    UErrorCode status = U_ZERO_ERROR;
    const icu::Normalizer2* n = icu::Normalizer2::getNFCInstance(status);
    require(U_SUCCESS(status) && n, "ICU: cannot load the NFC normaliser (", u_errorName(status),
            ")");
    return n;
  }();
  return *instance;
}

}  // namespace

std::string to_nfc(std::string_view text) {
  if (is_ascii(text)) return std::string(text);
  require(text.size() < (std::size_t{1} << 31), "NFC: a document of ", text.size(),
          " bytes is larger than ICU handles (2 GiB)");
  const icu::StringPiece piece(text.data(), static_cast<std::int32_t>(text.size()));
  UErrorCode status = U_ZERO_ERROR;
  if (nfc().isNormalizedUTF8(piece, status) && U_SUCCESS(status)) return std::string(text);
  std::string out;
  out.reserve(text.size());
  icu::StringByteSink<std::string> sink(&out);
  status = U_ZERO_ERROR;
  nfc().normalizeUTF8(0, piece, sink, nullptr, status);
  require(U_SUCCESS(status), "NFC normalisation failed (", u_errorName(status), ")");
  return out;
}

}  // namespace wiola
