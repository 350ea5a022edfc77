// i8 / u8 / i32 / i64 matrix products (oneDNN has none), and f64 ones (oneDNN 2.x has none): the
// GotoBLAS loop structure. The product is cut into tasks of kMc rows x kNc columns of one matrix of
// the batch; a task walks K in kKc-deep slices, packing its A slice into kMr-row groups and its B
// slice into kNr-column panels (zero-padded, so edge tiles run the same code), then multiplies
// every group by every panel in a register tile of kMr x kNr accumulators. Packing reads any
// strides (zero and negative included), so no operand is ever copied whole.
//
// Arithmetic is on the unsigned type of the same width: it wraps as the product must, without
// signed-overflow UB, and gives the same bits as two's-complement signed arithmetic.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>

#include "backends/cpu/isa.h"
#include "backends/cpu/kernels/parallel.h"
#include "backends/cpu/matmul_layout.h"

namespace streamfuse::backends::cpu {
namespace {

// 64-byte vectors (GCC/Clang vector extensions): one AVX-512 register, two AVX2 ones.
typedef std::uint32_t VecU32 __attribute__((vector_size(64)));
typedef std::uint64_t VecU64 __attribute__((vector_size(64)));
typedef std::uint8_t VecU8 __attribute__((vector_size(64)));
typedef double VecF64 __attribute__((vector_size(64)));

template <class U>
struct VecOf;
template <>
struct VecOf<std::uint32_t> {
  using type = VecU32;
};
template <>
struct VecOf<std::uint64_t> {
  using type = VecU64;
};
template <>
struct VecOf<std::uint8_t> {
  using type = VecU8;
};
template <>
struct VecOf<double> {
  using type = VecF64;
};

constexpr std::int64_t kMr = 4;    // rows of a register tile
constexpr std::int64_t kKc = 256;  // depth of a packed slice
constexpr std::int64_t kMc = 64;   // rows of a task (a multiple of kMr)
constexpr std::int64_t kNc = 256;  // columns of a task (a multiple of kNr)

template <class U>
constexpr std::int64_t kVecLen = 64 / sizeof(U);
template <class U>
constexpr std::int64_t kNr = 2 * kVecLen<U>;  // columns of a register tile: two vectors

// C[mc x nc] (row stride ldc) = or += packed A (groups of kMr rows, kc deep) x packed B (panels
// of kNr columns, kc deep).
template <class U>
[[gnu::always_inline]] inline void multiply_block(std::int64_t kc, std::int64_t mc, std::int64_t nc,
                                                  const U* ap, const U* bp, U* c, std::int64_t ldc,
                                                  bool accumulate) {
  using V = typename VecOf<U>::type;
  constexpr std::int64_t nr = kNr<U>, vl = kVecLen<U>;
  for (std::int64_t p = 0; p * nr < nc; ++p) {
    const U* panel = bp + p * kc * nr;
    const std::int64_t cols = std::min(nr, nc - p * nr);
    for (std::int64_t g = 0; g * kMr < mc; ++g) {
      const U* group = ap + g * kc * kMr;
      V acc[kMr][2] = {};
      for (std::int64_t k = 0; k < kc; ++k) {
        V b0, b1;
        std::memcpy(&b0, panel + k * nr, sizeof(V));
        std::memcpy(&b1, panel + k * nr + vl, sizeof(V));
        for (std::int64_t i = 0; i < kMr; ++i) {
          const U a = group[k * kMr + i];
          acc[i][0] += a * b0;
          acc[i][1] += a * b1;
        }
      }
      const std::int64_t rows = std::min(kMr, mc - g * kMr);
      for (std::int64_t i = 0; i < rows; ++i) {
        U* out = c + (g * kMr + i) * ldc + p * nr;
        if (cols == nr) {
          V old[2] = {};
          if (accumulate) std::memcpy(old, out, sizeof(old));
          old[0] += acc[i][0];
          old[1] += acc[i][1];
          std::memcpy(out, old, sizeof(old));
        } else {
          U tile[nr];
          std::memcpy(tile, acc[i], sizeof(tile));
          for (std::int64_t j = 0; j < cols; ++j) out[j] = (accumulate ? out[j] : U{0}) + tile[j];
        }
      }
    }
  }
}

// This file is built once, for baseline x86-64 like the rest of the library outside kernels/, so
// the multiply loop is compiled again for x86-64-v3 (AVX2) and v4 (AVX-512) and picked once by
// CPU (the features isa.cpp checks). A plain function pointer rather than target_clones: GCC's
// ifunc resolvers run before the sanitizers start and crash ThreadSanitizer builds.
template <class U>
using MultiplyBlock = void (*)(std::int64_t, std::int64_t, std::int64_t, const U*, const U*, U*,
                               std::int64_t, bool);

#if defined(__x86_64__) && defined(__GNUC__)
template <class U>
[[gnu::target("arch=x86-64-v4")]] void multiply_block_v4(std::int64_t kc, std::int64_t mc,
                                                         std::int64_t nc, const U* ap, const U* bp,
                                                         U* c, std::int64_t ldc, bool accumulate) {
  multiply_block(kc, mc, nc, ap, bp, c, ldc, accumulate);
}

template <class U>
[[gnu::target("arch=x86-64-v3")]] void multiply_block_v3(std::int64_t kc, std::int64_t mc,
                                                         std::int64_t nc, const U* ap, const U* bp,
                                                         U* c, std::int64_t ldc, bool accumulate) {
  multiply_block(kc, mc, nc, ap, bp, c, ldc, accumulate);
}

#endif

template <class U>
void multiply_block_baseline(std::int64_t kc, std::int64_t mc, std::int64_t nc, const U* ap,
                             const U* bp, U* c, std::int64_t ldc, bool accumulate) {
  multiply_block(kc, mc, nc, ap, bp, c, ldc, accumulate);
}

template <class U>
MultiplyBlock<U> multiply_block_for_cpu() {
#if defined(__x86_64__) && defined(__GNUC__)
  if (isa_level() == 4) return multiply_block_v4<U>;
  if (isa_level() == 3) return multiply_block_v3<U>;
#endif
  return multiply_block_baseline<U>;
}

// A[m0 : m0+mc, k0 : k0+kc] into groups of kMr rows, each stored k-major; rows past mc are 0.
template <class U>
void pack_a(const U* a, const MatrixLayout& x, std::int64_t m0, std::int64_t mc, std::int64_t k0,
            std::int64_t kc, U* ap) {
  for (std::int64_t g = 0; g * kMr < mc; ++g) {
    U* group = ap + g * kc * kMr;
    for (std::int64_t i = 0; i < kMr; ++i) {
      const std::int64_t row = g * kMr + i;
      if (row >= mc) {
        for (std::int64_t k = 0; k < kc; ++k) group[k * kMr + i] = 0;
        continue;
      }
      const U* src = a + (m0 + row) * x.row_stride + k0 * x.col_stride;
      for (std::int64_t k = 0; k < kc; ++k) group[k * kMr + i] = src[k * x.col_stride];
    }
  }
}

// B[k0 : k0+kc, n0 : n0+nc] into panels of kNr columns, each stored k-major; columns past nc
// are 0.
template <class U>
void pack_b(const U* b, const MatrixLayout& x, std::int64_t k0, std::int64_t kc, std::int64_t n0,
            std::int64_t nc, U* bp) {
  constexpr std::int64_t nr = kNr<U>;
  for (std::int64_t p = 0; p * nr < nc; ++p) {
    U* panel = bp + p * kc * nr;
    const std::int64_t cols = std::min(nr, nc - p * nr);
    for (std::int64_t k = 0; k < kc; ++k) {
      const U* src = b + (k0 + k) * x.row_stride + (n0 + p * nr) * x.col_stride;
      U* dst = panel + k * nr;
      if (x.col_stride == 1) {
        std::memcpy(dst, src, static_cast<std::size_t>(cols) * sizeof(U));
      } else {
        for (std::int64_t j = 0; j < cols; ++j) dst[j] = src[j * x.col_stride];
      }
      for (std::int64_t j = cols; j < nr; ++j) dst[j] = 0;
    }
  }
}

struct AlignedDelete {
  void operator()(void* p) const { ::operator delete (p, std::align_val_t{64}); }
};

template <class U>
void multiply(const MatmulLayout& l, const U* a, const U* b, U* c, int num_threads) {
  const std::int64_t m_tasks = (l.m + kMc - 1) / kMc, n_tasks = (l.n + kNc - 1) / kNc;
  const std::int64_t tasks = l.batch_count() * m_tasks * n_tasks;
  // Each thread gets a slot: its packing buffers and a contiguous range of tasks. Buffers are
  // allocated here, as nothing may throw inside the parallel region.
  const std::int64_t slots = std::min<std::int64_t>(max_threads(num_threads), tasks);
  const std::int64_t slot_size = kMc * kKc + kKc * kNc;
  const MultiplyBlock<U> multiply_block_fn = multiply_block_for_cpu<U>();
  const std::unique_ptr<void, AlignedDelete> buffers(::operator new (
      static_cast<std::size_t>(slots * slot_size) * sizeof(U), std::align_val_t{64}));

  parallel_for(slots, 1, num_threads, [&](std::int64_t first_slot, std::int64_t end_slot) {
    for (std::int64_t slot = first_slot; slot < end_slot; ++slot) {
      U* ap = static_cast<U*>(buffers.get()) + slot * slot_size;
      U* bp = ap + kMc * kKc;
      for (std::int64_t t = tasks * slot / slots; t < tasks * (slot + 1) / slots; ++t) {
        const std::int64_t nb = t % n_tasks, mb = (t / n_tasks) % m_tasks;
        const std::int64_t matrix = t / (n_tasks * m_tasks);
        const U* a_matrix = a + batch_offset(l, l.a, matrix);
        const U* b_matrix = b + batch_offset(l, l.b, matrix);
        const std::int64_t m0 = mb * kMc, mc = std::min(kMc, l.m - m0);
        const std::int64_t n0 = nb * kNc, nc = std::min(kNc, l.n - n0);
        U* c_block = c + matrix * l.m * l.n + m0 * l.n + n0;
        for (std::int64_t k0 = 0; k0 < l.k; k0 += kKc) {
          const std::int64_t kc = std::min(kKc, l.k - k0);
          pack_a(a_matrix, l.a, m0, mc, k0, kc, ap);
          pack_b(b_matrix, l.b, k0, kc, n0, nc, bp);
          multiply_block_fn(kc, mc, nc, ap, bp, c_block, l.n, k0 > 0);
        }
      }
    }
  });
}

}  // namespace

void integer_matmul(DType dtype, const MatmulLayout& layout, const void* a, const void* b,
                    void* out, int num_threads) {
  // Signed and unsigned variants of a type may alias each other, so reading the i32 / i64
  // operands as uint32 / uint64 is defined.
  // i8 and u8 products wrap to 8 bits as PyTorch's do: 8-bit unsigned arithmetic is the sum of
  // products modulo 256 for both (an i8's bits read as u8 are its value modulo 256).
  if (dtype == kF64) {  // in double, each dot product summed in k order (a tile's FMA aside)
    multiply(layout, static_cast<const double*>(a), static_cast<const double*>(b),
             static_cast<double*>(out), num_threads);
  } else if (element_size(dtype) == 1) {
    multiply(layout, static_cast<const std::uint8_t*>(a), static_cast<const std::uint8_t*>(b),
             static_cast<std::uint8_t*>(out), num_threads);
  } else if (dtype == kI32) {
    multiply(layout, static_cast<const std::uint32_t*>(a), static_cast<const std::uint32_t*>(b),
             static_cast<std::uint32_t*>(out), num_threads);
  } else {
    multiply(layout, static_cast<const std::uint64_t*>(a), static_cast<const std::uint64_t*>(b),
             static_cast<std::uint64_t*>(out), num_threads);
  }
}

}  // namespace streamfuse::backends::cpu
