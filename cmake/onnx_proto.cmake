# The ONNX protobuf schema for the importer (frontend/onnx), compiled here with protoc from the
# onnx.proto Debian's libonnx-dev ships. Its package is renamed (onnx -> kiln.onnx_proto, file
# kiln_onnx.proto) so libkiln's copy of the schema can never collide in protobuf's descriptor
# pool with a libonnx_proto an application also loads. The wire format does not depend on names.
#
# Sets KILN_ONNX_PROTO_SRCS (the generated .pb.cc) and KILN_ONNX_PROTO_DIR (its include folder).
find_package(Protobuf REQUIRED)
find_file(KILN_ONNX_PROTO_FILE onnx/onnx.proto PATHS /usr/include /usr/local/include
          DOC "onnx.proto (Debian: libonnx-dev)")
if(NOT KILN_ONNX_PROTO_FILE)
  message(FATAL_ERROR "onnx/onnx.proto not found: install libonnx-dev, or configure with -DKILN_WITH_ONNX=OFF")
endif()
set(KILN_ONNX_PROTO_DIR "${PROJECT_BINARY_DIR}/onnx_proto")
file(READ "${KILN_ONNX_PROTO_FILE}" kiln_onnx_proto_text)
string(REPLACE "package onnx;" "package kiln.onnx_proto;" kiln_onnx_proto_text "${kiln_onnx_proto_text}")
file(CONFIGURE OUTPUT "${KILN_ONNX_PROTO_DIR}/kiln_onnx.proto" CONTENT "${kiln_onnx_proto_text}" @ONLY)
add_custom_command(
  OUTPUT "${KILN_ONNX_PROTO_DIR}/kiln_onnx.pb.cc" "${KILN_ONNX_PROTO_DIR}/kiln_onnx.pb.h"
  COMMAND protobuf::protoc --cpp_out=${KILN_ONNX_PROTO_DIR} -I${KILN_ONNX_PROTO_DIR} ${KILN_ONNX_PROTO_DIR}/kiln_onnx.proto
  DEPENDS "${KILN_ONNX_PROTO_DIR}/kiln_onnx.proto"
  COMMENT "protoc: kiln_onnx.proto (onnx.proto from ${KILN_ONNX_PROTO_FILE})")
set(KILN_ONNX_PROTO_SRCS "${KILN_ONNX_PROTO_DIR}/kiln_onnx.pb.cc")
# Generated code is not held to -Werror.
set_source_files_properties(${KILN_ONNX_PROTO_SRCS} PROPERTIES COMPILE_OPTIONS "-w")
