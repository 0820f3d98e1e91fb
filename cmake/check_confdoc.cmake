# SPDX-License-Identifier: Apache-2.0
# test_configuration_md (tests/unit/lints/CMakeLists.txt): the committed
# docs/configuration.md must equal what kd_confdoc generates now.
# -DTOOL= kd_confdoc, -DTEMPLATE= docs/configuration.md.in,
# -DCOMMITTED= docs/configuration.md, -DOUT= where to write the generated
# text, -DBUILD_DIR= the build tree (for the refresh command).
execute_process(COMMAND ${TOOL} ${TEMPLATE} ${OUT} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "kd_confdoc failed (exit ${rc}); see above")
endif()
file(READ ${OUT} generated)
file(READ ${COMMITTED} committed)
if(generated STREQUAL committed)
  return()
endif()
find_program(KD_DIFF diff)
if(KD_DIFF)
  execute_process(COMMAND ${KD_DIFF} -u ${COMMITTED} ${OUT})
endif()
message(FATAL_ERROR
  "docs/configuration.md differs from what docs/configuration.md.in and the "
  "property table in src/lib/shared/conf_props.c generate (diff above: - committed, "
  "+ generated, ${OUT}). Edit those two, not the .md, then refresh it:\n"
  "  cmake --build ${BUILD_DIR} --target configuration_md")
