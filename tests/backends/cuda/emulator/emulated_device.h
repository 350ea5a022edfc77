// The contract between the emulated NVRTC and the emulated driver, and the CUDA dialect kernels
// are compiled in.
//
// The emulated NVRTC compiles a CUDA source as host C++ into a shared object: this header's text
// (embedded at build time, with SF_EMU_DEVICE_CODE defined), the source, and for every
// extern "C" __global__ kernel NAME an exported `const sf_emu_kernel sf_emu_kernel_NAME`. The
// driver dlopens the object, finds the descriptor by name and runs one GPU thread per call of
// `run`. The driver includes this header without SF_EMU_DEVICE_CODE and sees the contract only.
//
// The text is compiled as C++17 and includes nothing: the generated kernels' prelude does not
// either, and <type_traits> or <utility> would double a kernel's compile time.
#ifndef STREAMFUSE_TESTS_BACKENDS_CUDA_EMULATOR_EMULATED_DEVICE_H_
#define STREAMFUSE_TESTS_BACKENDS_CUDA_EMULATOR_EMULATED_DEVICE_H_

// Bumped whenever the structs below change: a module built for another version (say, from a
// kernel cache filled by an older emulator) is refused with CUDA_ERROR_INVALID_IMAGE.
#define SF_EMU_ABI_VERSION 2

struct sf_emu_uint3 {
  unsigned x, y, z;
};

// One emulated GPU thread: its indices and how it waits at __syncthreads.
struct sf_emu_thread {
  sf_emu_uint3 thread_idx, block_idx, block_dim, grid_dim;
  // Returns when every thread of the block still running has called it.
  void (*sync)(const sf_emu_thread* self);
  void* scheduler;  // the driver's, for `sync`
};

// One kernel of a module, exported as sf_emu_kernel_<name>.
struct sf_emu_kernel {
  int abi;  // SF_EMU_ABI_VERSION
  const char* name;
  // Runs the kernel as the thread `self`; params[k] points at the k-th parameter's value.
  void (*run)(void* const* params, const sf_emu_thread* self);
  // Makes `self` the calling OS thread's current GPU thread, which allocates the module's
  // thread-local storage (its __shared__ variables) for that thread: the driver calls it before
  // a block's fibers start, so that ThreadSanitizer sees the storage made before they use it.
  void (*bind)(const sf_emu_thread* self);
  int param_count;
  const unsigned long long* param_sizes;  // bytes of each parameter, for the launch's copy
  int max_threads;                        // __launch_bounds__' first argument, else 1024
  int cooperative;  // the source calls __syncthreads: a block's threads run as fibers
};

#ifdef SF_EMU_DEVICE_CODE

// ---- The CUDA dialect, as host C++ --------------------------------------------------------
// __CUDACC__ and __CUDACC_RTC__ stay undefined: the kernel prelude (core/scalar_ops.h,
// core/vector_math.h) then takes its plain C++ branch, which computes the same bits.
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
#define __constant__
// A block's threads run on one OS thread (as fibers, or one after another), and a stream's
// blocks one after another on its worker: per-thread storage is per-block storage, and
// launches on different streams, which run concurrently, do not share it. (At block scope
// thread_local implies static, so `static __shared__` works too.)
#define __shared__ thread_local

// A GPU has a fused multiply-add whatever the host's ISA level: the prelude's CPU branch uses
// one only under __FMA__, so it is given one here (libm's fmaf where the host has none).
#define SF_MATH_FMA(a, b, c) __builtin_fmaf((a), (b), (c))
#define SF_MATH_FMA_D(a, b, c) __builtin_fma((a), (b), (c))
#define SF_MATH_HAS_FMA 1

typedef sf_emu_uint3 uint3;
struct dim3 {
  unsigned x, y, z;
  constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
  constexpr dim3(sf_emu_uint3 v) : x(v.x), y(v.y), z(v.z) {}
};

// The thread the calling OS thread (or fiber) runs: set by each run() and restored after each
// __syncthreads, where the block's other fibers ran on this OS thread. Accessed atomically: the
// block's fibers share it, and ThreadSanitizer orders fibers only at barriers.
static thread_local const sf_emu_thread* sf_emu_self;

static inline const sf_emu_thread* sf_emu_current() {
  return __atomic_load_n(&sf_emu_self, __ATOMIC_RELAXED);
}
static inline void sf_emu_bind(const sf_emu_thread* self) {
  __atomic_store_n(&sf_emu_self, self, __ATOMIC_RELAXED);
}

#define threadIdx (sf_emu_current()->thread_idx)
#define blockIdx (sf_emu_current()->block_idx)
#define blockDim (sf_emu_current()->block_dim)
#define gridDim (sf_emu_current()->grid_dim)

static inline void __syncthreads() {
  const sf_emu_thread* self = sf_emu_current();
  self->sync(self);
  sf_emu_bind(self);
}
static inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
static inline void __threadfence_block() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }

// The reinterpretations and correctly rounded operations of <cuda_runtime>'s device functions
// that a kernel outside the prelude may call.
static inline unsigned __float_as_uint(float f) { return __builtin_bit_cast(unsigned, f); }
static inline float __uint_as_float(unsigned u) { return __builtin_bit_cast(float, u); }
static inline int __float_as_int(float f) { return __builtin_bit_cast(int, f); }
static inline float __int_as_float(int i) { return __builtin_bit_cast(float, i); }
static inline long long __double_as_longlong(double d) { return __builtin_bit_cast(long long, d); }
static inline double __longlong_as_double(long long l) { return __builtin_bit_cast(double, l); }
static inline float __fmaf_rn(float a, float b, float c) { return __builtin_fmaf(a, b, c); }
static inline double __fma_rn(double a, double b, double c) { return __builtin_fma(a, b, c); }
static inline float __fsqrt_rn(float x) { return __builtin_sqrtf(x); }

// ---- Calling a kernel with the launch's parameters ----------------------------------------
template <unsigned... I>
struct sf_emu_indices {};
template <unsigned N, unsigned... I>
struct sf_emu_make_indices : sf_emu_make_indices<N - 1, N - 1, I...> {};
template <unsigned... I>
struct sf_emu_make_indices<0, I...> {
  typedef sf_emu_indices<I...> type;
};

template <class F>
struct sf_emu_signature;
// A kernel's parameters are values (a function type drops their top-level const).
template <class... P>
struct sf_emu_signature<void (*)(P...)> {
  static constexpr int count = sizeof...(P);
  static constexpr unsigned long long sizes[sizeof...(P) + 1] = {sizeof(P)..., 0};

  template <void (*F)(P...), unsigned... I>
  static void call(void* const* params, sf_emu_indices<I...>) {
    F(*static_cast<P*>(params[I])...);
  }
  template <void (*F)(P...)>
  static void run(void* const* params, const sf_emu_thread* self) {
    sf_emu_bind(self);
    call<F>(params, typename sf_emu_make_indices<sizeof...(P)>::type());
  }
};

// The descriptor of kernel `fn`, as the emulated NVRTC appends it after the source.
#define SF_EMU_KERNEL(fn, bounds, cooperative)                                                   \
  extern "C" __attribute__((visibility("default")))                                              \
  const sf_emu_kernel sf_emu_kernel_##fn = {SF_EMU_ABI_VERSION,                                  \
                                            #fn,                                                 \
                                            &sf_emu_signature<decltype(&fn)>::template run<&fn>, \
                                            &sf_emu_bind,                                        \
                                            sf_emu_signature<decltype(&fn)>::count,              \
                                            sf_emu_signature<decltype(&fn)>::sizes,              \
                                            (int)(bounds),                                       \
                                            (cooperative)};

extern "C" __attribute__((visibility("default"))) const int sf_emu_module_abi = SF_EMU_ABI_VERSION;

#endif  // SF_EMU_DEVICE_CODE

#endif  // STREAMFUSE_TESTS_BACKENDS_CUDA_EMULATOR_EMULATED_DEVICE_H_
