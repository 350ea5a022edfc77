// Kernel launches on the emulated GPU: the launch as cuLaunchKernel queues it (with a copy of its
// parameters, which the caller may reuse as soon as the call returns), and its execution on the
// stream's worker: every block in turn, every thread of a block either one after another (a
// kernel that never calls __syncthreads) or as fibers that meet at each barrier.
#pragma once

#include <cuda.h>

#include <memory>

#include "tests/backends/cuda/emulator/emulated_modules.h"

namespace streamfuse::backends::cuda::emulator {

struct Launch;

// Checks a launch and copies its parameters: CUDA_ERROR_INVALID_HANDLE for an unknown function,
// CUDA_ERROR_INVALID_VALUE for a zero or too large grid or block,
// CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES for a block larger than the kernel's __launch_bounds__,
// CUDA_ERROR_NOT_SUPPORTED for dynamic shared memory or `extra` parameters (no generated kernel
// uses either).
CUresult prepare_launch(std::shared_ptr<Launch>& out, CUfunction f, const unsigned grid[3],
                        const unsigned block[3], unsigned shared_bytes, void** params,
                        void** extra);
// Runs every thread of the launch on the calling thread.
void run_launch(const Launch& launch);

}  // namespace streamfuse::backends::cuda::emulator
