# The embedded default dataset: Debian's fortunes, tokenised by
# `wiola-data build-embedded` into ${CMAKE_BINARY_DIR}/data as part of `all`:
# a byte-level BPE tokenizer trained at build time on the training documents
# (fortunes.bpe, also embedded in both token files), fortunes-train.h5 and
# fortunes-val.h5 (docs/data-format.md describes the files and the split).
set(WIOLA_FORTUNES_DIR "/usr/share/games/fortunes" CACHE PATH
    "Directory of the fortunes text files the embedded dataset is built from")
set(WIOLA_EMBEDDED_TOKENIZER "bpe" CACHE STRING
    "Tokenizer of the embedded dataset: bpe (trained at build time) or byte")
set_property(CACHE WIOLA_EMBEDDED_TOKENIZER PROPERTY STRINGS bpe byte)
set(WIOLA_EMBEDDED_VOCAB 2048 CACHE STRING
    "BPE vocabulary size of the embedded dataset (docs/data-format.md: how it was chosen)")
if(NOT IS_DIRECTORY "${WIOLA_FORTUNES_DIR}")
  message(FATAL_ERROR
    "${WIOLA_FORTUNES_DIR} does not exist: the embedded dataset is built from Debian's "
    "'fortunes' package. Run tools/install-deps.sh (or apt-get install fortunes), "
    "then configure again.")
endif()

set(WIOLA_EMBEDDED_DIR "${CMAKE_BINARY_DIR}/data")
set(WIOLA_EMBEDDED_TRAIN "${WIOLA_EMBEDDED_DIR}/fortunes-train.h5" CACHE INTERNAL
    "Embedded training token file")
set(WIOLA_EMBEDDED_VAL "${WIOLA_EMBEDDED_DIR}/fortunes-val.h5" CACHE INTERNAL
    "Embedded validation token file")
set(WIOLA_EMBEDDED_BPE "${WIOLA_EMBEDDED_DIR}/fortunes.bpe" CACHE INTERNAL
    "Tokenizer file of the embedded dataset (bpe only)")

if(TARGET wiola-data)
  # Rebuilt when the tool, a fortune file or the settings change.
  file(GLOB WIOLA_FORTUNE_FILES LIST_DIRECTORIES false "${WIOLA_FORTUNES_DIR}/*")
  set(WIOLA_EMBEDDED_STAMP "${WIOLA_EMBEDDED_DIR}/settings.txt")
  file(CONFIGURE OUTPUT "${WIOLA_EMBEDDED_STAMP}"
       CONTENT "tokenizer=${WIOLA_EMBEDDED_TOKENIZER} vocab=${WIOLA_EMBEDDED_VOCAB}\n")
  add_custom_command(
    OUTPUT "${WIOLA_EMBEDDED_TRAIN}" "${WIOLA_EMBEDDED_VAL}"
    COMMAND wiola-data build-embedded --source "${WIOLA_FORTUNES_DIR}" --out "${WIOLA_EMBEDDED_DIR}"
            --tokenizer "${WIOLA_EMBEDDED_TOKENIZER}" --vocab "${WIOLA_EMBEDDED_VOCAB}"
    DEPENDS wiola-data ${WIOLA_FORTUNE_FILES} "${WIOLA_EMBEDDED_STAMP}"
    COMMENT "Building the embedded fortunes dataset in ${WIOLA_EMBEDDED_DIR}"
    VERBATIM)
  add_custom_target(wiola_embedded_data ALL
                    DEPENDS "${WIOLA_EMBEDDED_TRAIN}" "${WIOLA_EMBEDDED_VAL}")
endif()
