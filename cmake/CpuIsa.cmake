# The x86-64 ISA levels CPU kernels are compiled for; the best one the running CPU supports is
# picked at start-up (backends/cpu/isa.cpp), so one build runs on any x86-64 machine and still
# uses AVX-512 where there is one.
#
# Kernels always build at -O3: they are leaf code, and tests on large tensors crawl at -O0.
# -ffp-contract=off keeps a*b+c as two roundings unless the source asks for fma, so the eager
# kernels, the fused interpreter and the JIT compute the same bits on one machine (levels with
# FMA agree with each other; the baseline without FMA agrees within the math functions' bound).
set(STREAMFUSE_KERNEL_FLAGS -O3 -ffp-contract=off -fno-math-errno -fno-trapping-math)
if(CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64|amd64")
  set(STREAMFUSE_CPU_ISAS v2 v3 v4)
  set(STREAMFUSE_ISA_FLAGS_v2 -march=x86-64-v2)
  set(STREAMFUSE_ISA_FLAGS_v3 -march=x86-64-v3)
  # GCC keeps to 256-bit vectors on AVX-512 machines unless asked (1.5x on the custom-erf GELU).
  set(STREAMFUSE_ISA_FLAGS_v4 -march=x86-64-v4 -mprefer-vector-width=512)
else()
  set(STREAMFUSE_CPU_ISAS generic)
  set(STREAMFUSE_ISA_FLAGS_generic)
endif()

# streamfuse_isa_variant(target isa): compile `target` with the flags of ISA level `isa`.
function(streamfuse_isa_variant target isa)
  target_compile_options(${target} PRIVATE ${STREAMFUSE_KERNEL_FLAGS} ${STREAMFUSE_ISA_FLAGS_${isa}})
  target_compile_definitions(${target} PRIVATE STREAMFUSE_ISA=${isa})
endfunction()
