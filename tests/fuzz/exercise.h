// What the library does next with what a cache decoder returned, done cheaply and
// deterministically by the fuzz targets. Each aborts (fail()) where the object turns out not to
// be as safe as one the library built: a check the decoder promised does not hold, the
// interpreter or a code generator refuses it, a run breaks one of plan_runner's rules, or its
// bytes do not encode back to what was decoded.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "backends/backend.h"
#include "fusion/plan.h"
#include "jit/kernel_codec.h"
#include "jit/program.h"
#include "jit/specialization.h"
#include "runtime/bundle.h"

namespace streamfuse::fuzz {

// Input that the same encoder would write again byte for byte: a decoder reads every field as it
// is, so re-encoding a decoded value gives back its bytes, unless the writer's byte order differed
// (the first byte of a payload).
bool native_byte_order(std::string_view bytes);

// Prints, hashes and simplifies the program; interprets it over a small broadcast iteration;
// takes that launch's key and generates the C++ and CUDA source of the kernel.
void use_program(const jit::FusedProgram& program);
// Prints and hashes the key.
void use_key(const jit::SpecializationKey& key);
// Generates the C++ and CUDA source of the kernel of (program, key), as the kernel cache does for
// a record it must compile again.
void use_kernel(const jit::FusedProgram& program, const jit::SpecializationKey& key);
// Prints, hashes and runs the plan (plan_runner), as the plan store and processor would.
void use_plan(const fusion::ExecutionPlan& plan);
// Computes what the backend computes before it prepares the op (layout, element counts).
void use_prepared_op(const backends::PreparedOp& op);
// Everything a loaded bundle holds, as load_bundle hands it to the device runtime.
void use_sections(const std::vector<runtime::BundleSection>& sections);

}  // namespace streamfuse::fuzz
