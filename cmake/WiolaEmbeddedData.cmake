# The embedded default dataset: Debian's fortunes, byte-tokenised by
# `wiola-data build-embedded` into ${CMAKE_BINARY_DIR}/data as part of `all`
# (docs/data-format.md describes the files and the train/validation split).
set(WIOLA_FORTUNES_DIR "/usr/share/games/fortunes" CACHE PATH
    "Directory of the fortunes text files the embedded dataset is built from")
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

if(TARGET wiola-data)
  # Rebuilt when the tool or a fortune file changes.
  file(GLOB WIOLA_FORTUNE_FILES LIST_DIRECTORIES false "${WIOLA_FORTUNES_DIR}/*")
  add_custom_command(
    OUTPUT "${WIOLA_EMBEDDED_TRAIN}" "${WIOLA_EMBEDDED_VAL}"
    COMMAND wiola-data build-embedded --source "${WIOLA_FORTUNES_DIR}" --out "${WIOLA_EMBEDDED_DIR}"
    DEPENDS wiola-data ${WIOLA_FORTUNE_FILES}
    COMMENT "Building the embedded fortunes dataset in ${WIOLA_EMBEDDED_DIR}"
    VERBATIM)
  add_custom_target(wiola_embedded_data ALL
                    DEPENDS "${WIOLA_EMBEDDED_TRAIN}" "${WIOLA_EMBEDDED_VAL}")
endif()
