// Layer probe: what kiln_onnx (the ONNX importer, frontend/onnx) may include and what it must not
// see (tests/layers/CMakeLists.txt). protobuf and the generated schema stay private to it.

#if !__has_include("frontend/onnx/parse.h")
#error "kiln_onnx cannot see frontend/onnx/parse.h, its own header"
#endif
#if !__has_include("kiln/tensor.h")
#error "kiln_onnx cannot see kiln/tensor.h: it builds graphs through the public op builders"
#endif
#if __has_include("kiln_onnx.pb.h")
#error "kiln_onnx exports its generated protobuf schema: it must stay private to the layer"
#endif
#if __has_include("passes/fuse.h")
#error "kiln_onnx can see passes/fuse.h: an include running backwards would compile"
#endif
#if __has_include("codegen/c_family/gpu_program.h")
#error "kiln_onnx can see codegen/c_family/gpu_program.h: an include running backwards would compile"
#endif
#if __has_include("backends/cpu/thread_pool.h")
#error "kiln_onnx can see backends/cpu/thread_pool.h: an include running backwards would compile"
#endif
