# SPDX-License-Identifier: Apache-2.0
# The libFuzzer targets, one per parser of untrusted input (fuzz/fuzz_NAME.c,
# seeds in fuzz/corpus/NAME/, crashers kept in fuzz/regress/NAME/). Included
# by fuzz/CMakeLists.txt (the libFuzzer binaries fuzz_NAME, with
# -DKDELAY_FUZZ=ON) and tests/unit/lib/CMakeLists.txt (test_fuzz_regress_NAME,
# replaying the corpus and the regressions without libFuzzer in every build).
#
#   wire      wire decoder, durations, tier lists, MySQL URLs (fuzz_wire.c)
#   offmeta   the done set in exactly_once commit metadata (offtrack.c, doneset.c)
#   time      durations and kdelayctl's --at times (duration.c, ctl_time.c)
#   logquote  log value quoting and line cutting (log.c)
#   conf      config file text and name=value settings (conf_file.c, conf_props.c)
set(KD_FUZZ_TARGETS wire offmeta time logquote conf)

# Adds fuzz target `name`'s sources and libraries to target `tgt`.
function(kd_fuzz_setup tgt name)
  target_sources(${tgt} PRIVATE ${PROJECT_SOURCE_DIR}/fuzz/fuzz_${name}.c)
  target_link_libraries(${tgt} PRIVATE kdelay_static)
  if(name STREQUAL "offmeta")
    target_link_libraries(${tgt} PRIVATE kd_fwdonly)
  elseif(name STREQUAL "time")
    target_sources(${tgt} PRIVATE ${PROJECT_SOURCE_DIR}/src/ctl/ctl_time.c)
    target_include_directories(${tgt} PRIVATE ${PROJECT_SOURCE_DIR}/src/ctl)
  elseif(name STREQUAL "logquote")
    target_sources(${tgt}
      PRIVATE ${PROJECT_SOURCE_DIR}/tests/common/kd_logfields.c)
    target_include_directories(${tgt}
      PRIVATE ${PROJECT_SOURCE_DIR}/tests/common)
  endif()
endfunction()
