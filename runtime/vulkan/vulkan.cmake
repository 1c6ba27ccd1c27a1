# The Vulkan backend (included from the top CMakeLists.txt when KILN_WITH_VULKAN is on).
# Vulkan itself is loaded at run time (dlopen libvulkan.so.1), so only its headers are needed to
# build. GLSL -> SPIR-V links shaderc_combined with glslang's and SPIRV-Tools' static libraries in
# one group: Debian 12's shared libshaderc is underlinked and crashes (docs: TOOLCHAIN.md).
find_package(Vulkan QUIET)
find_path(KILN_SHADERC_INCLUDE_DIR shaderc/shaderc.hpp)
find_path(KILN_SPIRV_TOOLS_INCLUDE_DIR spirv-tools/optimizer.hpp)
set(_kiln_vk_missing "")
if(NOT TARGET Vulkan::Headers)
  list(APPEND _kiln_vk_missing "Vulkan headers (libvulkan-dev)")
endif()
if(NOT KILN_SHADERC_INCLUDE_DIR)
  list(APPEND _kiln_vk_missing "shaderc headers (libshaderc-dev)")
endif()
if(NOT KILN_SPIRV_TOOLS_INCLUDE_DIR)
  list(APPEND _kiln_vk_missing "SPIRV-Tools headers (spirv-tools)")
endif()
set(_kiln_vk_libs "")
foreach(lib shaderc_combined glslang MachineIndependent GenericCodeGen OSDependent OGLCompiler SPIRV SPIRV-Tools-opt SPIRV-Tools)
  find_library(KILN_VK_LIB_${lib} NAMES lib${lib}.a)
  if(KILN_VK_LIB_${lib})
    list(APPEND _kiln_vk_libs ${KILN_VK_LIB_${lib}})
  else()
    list(APPEND _kiln_vk_missing "lib${lib}.a")
  endif()
endforeach()

if(_kiln_vk_missing)
  message(STATUS "kiln: Vulkan backend OFF (missing: ${_kiln_vk_missing})")
else()
  message(STATUS "kiln: Vulkan backend ON")
  target_sources(kiln PRIVATE
    runtime/vulkan/vk_api.cc runtime/vulkan/vk_status.cc runtime/vulkan/select_device.cc
    runtime/vulkan/context.cc runtime/vulkan/memory.cc runtime/vulkan/transfer.cc
    runtime/vulkan/spirv_compiler.cc runtime/vulkan/spirv_float_controls.cc runtime/vulkan/kernel_compiler.cc
    runtime/vulkan/pipeline_cache.cc runtime/vulkan/pipeline.cc runtime/vulkan/shadow_access.cc runtime/vulkan/executable.cc
    runtime/vulkan/vulkan_device.cc)
  target_compile_definitions(kiln PRIVATE KILN_HAVE_VULKAN)
  target_include_directories(kiln SYSTEM PRIVATE ${KILN_SHADERC_INCLUDE_DIR} ${KILN_SPIRV_TOOLS_INCLUDE_DIR})
  target_link_libraries(kiln PRIVATE Vulkan::Headers "$<LINK_GROUP:RESCAN,${_kiln_vk_libs}>" Threads::Threads ${CMAKE_DL_LIBS})
  set(KILN_HAVE_VULKAN ON)
endif()
