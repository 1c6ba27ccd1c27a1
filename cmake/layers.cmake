# kiln's layers, enforced by the build.
#
# Each layer is an OBJECT library whose include path holds ONLY its own folders (as symlinks in
# build/layers/<layer>/) plus, through its dependencies, the layers it is allowed to use. An
# `#include "runtime/device.h"` written in passes/ therefore fails to compile: passes/ does not
# depend on runtime/. The layers' objects are linked into the one libkiln (kiln_layer appends
# each to the KILN_LAYERS global property).
#
#   kiln_layer(<target> DIRS <folder>... SOURCES <file>... [DEPS <layer or library>...]
#              [PRIVATE_DEPS <library>...])
#
# DEPS are public (a layer's headers may include theirs); PRIVATE_DEPS are for the layer's own
# sources only (external libraries such as LLVM or NVRTC, never seen above the layer).
function(kiln_layer target)
  cmake_parse_arguments(L "" "" "DIRS;SOURCES;DEPS;PRIVATE_DEPS" ${ARGN})
  add_library(${target} OBJECT ${L_SOURCES})
  set(root "${PROJECT_BINARY_DIR}/layers/${target}")
  foreach(dir ${L_DIRS})
    get_filename_component(parent "${root}/${dir}" DIRECTORY)
    file(MAKE_DIRECTORY "${parent}")
    file(CREATE_LINK "${PROJECT_SOURCE_DIR}/${dir}" "${root}/${dir}" SYMBOLIC)
  endforeach()
  target_include_directories(${target} PUBLIC "${root}")
  target_link_libraries(${target} PUBLIC ${L_DEPS} PRIVATE ${L_PRIVATE_DEPS})
  set_property(GLOBAL APPEND PROPERTY KILN_LAYERS ${target})
endfunction()
