// Reductions, once: what each reduction accumulates and in which order, for every kernel that
// reduces. The eager CPU kernel (backends/cpu/kernels/reduce.cpp) instantiates these templates;
// generated CPU and CUDA code include them as kernel prelude text, so a fused reduction can equal
// the unfused one bit for bit.
//
// An accumulator Op has a value type (what elements are read as), an acc type, identity(),
// step(acc, value, index), merge(acc, acc) and kAnyOrder; a reduction's result is a function of
// its elements in a fixed order only:
// - a run of n elements whose loads are contiguous and n >= 4 * SF_REDUCE_LANES folds in
//   SF_REDUCE_LANES interleaved accumulators (lane l takes elements l, l + LANES, ...; the loop
//   vectorizes without reassociating), merged in lane order, then the rest in order; a float
//   sum's lane adds its elements SF_REDUCE_PART_ROUNDS at a time in float first (sf_lane_part);
// - any other run folds in order;
// - a reduction is split into blocks of SF_REDUCE_BLOCK elements, each folded from the identity
//   (sf_reduce_block), their results merged into the identity in block order (so threads, or GPU
//   blocks, may fold blocks in any order and the result stays the same);
// - where the reduced elements are not one strided run (all elements of a layout whose
//   dimensions do not merge), a block folds run by run along the innermost merged dimension,
//   continuing one accumulator.
// A kernel may fold a run's lanes in parallel (sf_reduce_lane, then sf_reduce_tail): the same
// order.
// Float sums accumulate in double (lanes by parts of 8 floats), f64 sums in double, integer sums
// in wrapping 64 bits; max and min let NaN win; argmax takes the first index of the largest value,
// NaN counting as largest.
//
// Where the order cannot change the result (Op::kAnyOrder: max and min, NaN payloads aside, and
// integer sums), runs and pushed pieces fold in the order that is fastest on the CPU instead
// (sf_reduce_any_order: four independent sets of lanes, merged as a tree; float max and min on
// integer keys of the floats), so a kernel that follows the order above still gets the same
// value.
//
// Like the other prelude headers the text is pasted verbatim into generated kernels: it includes
// nothing (include scalar_ops.h first) and reaches the platform only through SF_MATH_FN.
#ifndef STREAMFUSE_CORE_REDUCE_MATH_H_
#define STREAMFUSE_CORE_REDUCE_MATH_H_

#define SF_REDUCE_LANES 16
#define SF_REDUCE_BLOCK 65536LL

// sf_reduce_run is out of line on the CPU: GCC 12.2 (Debian 12's compiler, which also builds the
// JIT's kernels) miscompiles it at -O3 for AVX2 and AVX-512 once it is inlined into a loop (over
// runs or blocks) with elements that widen from 8 bits: a bool sum of more than one block
// counted one element per lane (ReductionTest.BoolSumsCountEveryElementInEveryLayout). Out of
// line it is right; the call costs 18% on a sum of 16-element rows and nothing on longer ones.
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define SF_REDUCE_RUN_FN SF_MATH_FN
#else
#define SF_REDUCE_RUN_FN static __attribute__((noinline))
#endif
// Member functions of the template's state structs (SF_MATH_FN's functions are static).
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define SF_REDUCE_MEMBER_FN __device__ __forceinline__
#else
#define SF_REDUCE_MEMBER_FN inline __attribute__((always_inline))
#endif

// The extremes of the integer value types (identities of max, min and argmax).
template <class T>
struct sf_int_limits;
template <>
struct sf_int_limits<int> {
  SF_MATH_FN int lowest() { return -2147483647 - 1; }
  SF_MATH_FN int highest() { return 2147483647; }
};
template <>
struct sf_int_limits<long long> {
  SF_MATH_FN long long lowest() { return -9223372036854775807LL - 1; }
  SF_MATH_FN long long highest() { return 9223372036854775807LL; }
};
template <>
struct sf_int_limits<unsigned char> {
  SF_MATH_FN unsigned char lowest() { return 0; }
  SF_MATH_FN unsigned char highest() { return 1; }  // bool
};

// Sum (and mean) of float values (f32, f16, bf16 read as float): in double.
struct sf_sum_float {
  typedef float value;
  typedef double acc;
  static const int kAnyOrder = 0;
  SF_MATH_FN acc identity() { return 0.0; }
  SF_MATH_FN acc step(acc a, value x, long long) { return a + (double)x; }
  SF_MATH_FN acc merge(acc a, acc b) { return a + b; }
};

// How a lane of a contiguous run folds (sf_reduce_run, sf_reduce_lane, sf_reduce_fold): by
// default element by element into its accumulator (kRounds 1; `part` is unused). A float sum's
// lane adds SF_REDUCE_PART_ROUNDS of its elements at a time in float, in order from 0, and adds
// that part into its double accumulator: converting every element to double cost as much as
// the rest of a fused layer_norm's reductions (two conversions and a shuffle per 16 floats;
// the part's float adds take half the time of the double ones). A part of 8 floats is off by at
// most 7 float roundings, 7 * 2^-24 of the sum of its magnitudes; a sum of parts in double stays
// within that bound, more accurate than a float sum of any length in any order beyond 8.
#define SF_REDUCE_PART_ROUNDS 8
//
// held: the lanes' accumulators while a loop absorbs whole rounds of parts (hold, absorb_all,
// release). GCC keeps an array of 16 doubles as 16 scalars there and converts each part on its
// own; as two vectors of 8 the absorption is two conversions and two adds (a fused layer_norm of
// rows of 768 in 0.87 of the time).
template <class Op>
struct sf_lane_part {
  static const int kRounds = 1;
  typedef unsigned char part;  // unused: what follows only lets the part paths compile
  struct held {};
  SF_MATH_FN part identity() { return 0; }
  SF_MATH_FN part step(part p, typename Op::value) { return p; }
  SF_MATH_FN typename Op::acc absorb(typename Op::acc a, part) { return a; }
  SF_MATH_FN held hold(const typename Op::acc*) { return held(); }
  SF_MATH_FN void absorb_all(held&, const part*) {}
  SF_MATH_FN void release(const held&, typename Op::acc*) {}
};
template <>
struct sf_lane_part<sf_sum_float> {
  static const int kRounds = SF_REDUCE_PART_ROUNDS;
  typedef float part;
  SF_MATH_FN part identity() { return 0.0f; }
  SF_MATH_FN part step(part p, float x) { return p + x; }
  SF_MATH_FN double absorb(double a, part p) { return a + (double)p; }
#if !defined(__CUDACC__) && !defined(__CUDACC_RTC__) && defined(__GNUC__)
  typedef float f16v __attribute__((vector_size(16 * sizeof(float))));
  typedef double d8v __attribute__((vector_size(8 * sizeof(double))));
  struct held {
    d8v lo, hi;
  };
  SF_MATH_FN held hold(const double* lanes) {
    held h;
    __builtin_memcpy(&h.lo, lanes, sizeof(d8v));
    __builtin_memcpy(&h.hi, lanes + 8, sizeof(d8v));
    return h;
  }
  SF_MATH_FN void absorb_all(held& h, const float* parts) {
    f16v p;
    __builtin_memcpy(&p, parts, sizeof(f16v));
    h.lo += __builtin_convertvector(__builtin_shufflevector(p, p, 0, 1, 2, 3, 4, 5, 6, 7), d8v);
    h.hi +=
        __builtin_convertvector(__builtin_shufflevector(p, p, 8, 9, 10, 11, 12, 13, 14, 15), d8v);
  }
  SF_MATH_FN void release(const held& h, double* lanes) {
    __builtin_memcpy(lanes, &h.lo, sizeof(d8v));
    __builtin_memcpy(lanes + 8, &h.hi, sizeof(d8v));
  }
#else
  struct held {
    double lanes[SF_REDUCE_LANES];
  };
  SF_MATH_FN held hold(const double* lanes) {
    held h;
    for (int l = 0; l < SF_REDUCE_LANES; ++l) h.lanes[l] = lanes[l];
    return h;
  }
  SF_MATH_FN void absorb_all(held& h, const float* parts) {
    for (int l = 0; l < SF_REDUCE_LANES; ++l) h.lanes[l] = absorb(h.lanes[l], parts[l]);
  }
  SF_MATH_FN void release(const held& h, double* lanes) {
    for (int l = 0; l < SF_REDUCE_LANES; ++l) lanes[l] = h.lanes[l];
  }
#endif
};

// Sum (and mean) of f64 values: in double, element by element.
struct sf_sum_f64 {
  typedef double value;
  typedef double acc;
  static const int kAnyOrder = 0;
  SF_MATH_FN acc identity() { return 0.0; }
  SF_MATH_FN acc step(acc a, value x, long long) { return a + x; }
  SF_MATH_FN acc merge(acc a, acc b) { return a + b; }
};

// Sum (and mean) of integer values: wrapping 64-bit.
struct sf_sum_int {
  typedef long long value;
  typedef long long acc;
  static const int kAnyOrder = 1;  // wrapping addition is associative
  SF_MATH_FN acc identity() { return 0; }
  SF_MATH_FN acc step(acc a, value x, long long) { return sf_add(a, x); }
  SF_MATH_FN acc merge(acc a, acc b) { return sf_add(a, b); }
};

// Max / min of float values: NaN wins (sf_max, sf_min).
template <int kMax>
struct sf_extreme_float {
  typedef float value;
  typedef float acc;
  static const int kAnyOrder = 1;  // NaN payloads aside: the first NaN folded wins
  SF_MATH_FN acc identity() {
    return kMax ? SF_MATH_AS_FLOAT(0xff800000u) : SF_MATH_AS_FLOAT(0x7f800000u);  // -inf, +inf
  }
  SF_MATH_FN acc merge(acc a, acc b) { return kMax ? sf_max(a, b) : sf_min(a, b); }
  SF_MATH_FN acc step(acc a, value x, long long) { return merge(a, x); }
};

// Max / min of f64 values: NaN wins (sf_max, sf_min).
template <int kMax>
struct sf_extreme_f64 {
  typedef double value;
  typedef double acc;
  static const int kAnyOrder = 1;  // NaN payloads aside
  SF_MATH_FN acc identity() {
    return kMax ? SF_MATH_AS_DOUBLE(0xfff0000000000000ULL)
                : SF_MATH_AS_DOUBLE(0x7ff0000000000000ULL);
  }
  SF_MATH_FN acc merge(acc a, acc b) { return kMax ? sf_max(a, b) : sf_min(a, b); }
  SF_MATH_FN acc step(acc a, value x, long long) { return merge(a, x); }
};

// Max / min of integer (or bool) values.
template <class T, int kMax>
struct sf_extreme_int {
  typedef T value;
  typedef T acc;
  static const int kAnyOrder = 1;
  SF_MATH_FN acc identity() {
    return kMax ? sf_int_limits<T>::lowest() : sf_int_limits<T>::highest();
  }
  SF_MATH_FN acc merge(acc a, acc b) { return kMax ? (a < b ? b : a) : (b < a ? b : a); }
  SF_MATH_FN acc step(acc a, value x, long long) { return merge(a, x); }
};

// Argmax: the value and index of the best so far.
template <class T>
struct sf_argmax_acc {
  T value;
  long long index;
};

// Argmax of float values: NaN counts as largest, the first index wins ties.
struct sf_argmax_float {
  typedef float value;
  typedef sf_argmax_acc<float> acc;
  static const int kAnyOrder = 0;  // the same result in any order, but lanes of (value, index)
                                   // vectorize no better than the ordered fold
  SF_MATH_FN int greater(float a, float b) { return (a != a && b == b) || a > b; }
  // The smallest value (-inf) at an index past every real one: any element ties or beats it,
  // and wins the tie by its smaller index.
  SF_MATH_FN acc identity() {
    acc a;
    a.value = SF_MATH_AS_FLOAT(0xff800000u);
    a.index = 9223372036854775807LL;
    return a;
  }
  SF_MATH_FN acc merge(acc a, acc b) {
    if (greater(b.value, a.value)) return b;
    if (greater(a.value, b.value)) return a;
    return b.index < a.index ? b : a;  // equal (or both NaN): the earlier index
  }
  // Through merge, so a value equal to the identity's still wins its index over the identity's
  // placeholder.
  SF_MATH_FN acc step(acc a, value x, long long i) {
    acc b;
    b.value = x;
    b.index = i;
    return merge(a, b);
  }
};

// Argmax of f64 values: as of float values.
struct sf_argmax_f64 {
  typedef double value;
  typedef sf_argmax_acc<double> acc;
  static const int kAnyOrder = 0;
  SF_MATH_FN int greater(double a, double b) { return (a != a && b == b) || a > b; }
  SF_MATH_FN acc identity() {
    acc a;
    a.value = SF_MATH_AS_DOUBLE(0xfff0000000000000ULL);
    a.index = 9223372036854775807LL;
    return a;
  }
  SF_MATH_FN acc merge(acc a, acc b) {
    if (greater(b.value, a.value)) return b;
    if (greater(a.value, b.value)) return a;
    return b.index < a.index ? b : a;
  }
  SF_MATH_FN acc step(acc a, value x, long long i) {
    acc b;
    b.value = x;
    b.index = i;
    return merge(a, b);
  }
};

// Argmax of integer (or bool) values: the first index of the largest.
template <class T>
struct sf_argmax_int {
  typedef T value;
  typedef sf_argmax_acc<T> acc;
  static const int kAnyOrder = 0;
  SF_MATH_FN acc identity() {
    acc a;
    a.value = sf_int_limits<T>::lowest();
    a.index = 9223372036854775807LL;
    return a;
  }
  SF_MATH_FN acc merge(acc a, acc b) {
    if (b.value > a.value) return b;
    if (a.value > b.value) return a;
    return b.index < a.index ? b : a;
  }
  SF_MATH_FN acc step(acc a, value x, long long i) {
    acc b;
    b.value = x;
    b.index = i;
    return merge(a, b);
  }
};

// How many of a run's n elements sf_reduce_run folds in lanes (the first ones, a multiple of
// SF_REDUCE_LANES; the rest follow one by one): none unless the run is contiguous and long.
SF_MATH_FN long long sf_reduce_lane_span(int contiguous, long long n) {
  return contiguous && n >= 4 * SF_REDUCE_LANES ? n / SF_REDUCE_LANES * SF_REDUCE_LANES : 0;
}

// Which float extreme an Op is (1 max, -1 min, 0 neither): sf_reduce_any_order folds their keys.
template <class Op>
struct sf_float_extreme {
  static const int kind = 0;
};
template <int kMax>
struct sf_float_extreme<sf_extreme_float<kMax> > {
  static const int kind = kMax ? 1 : -1;
};

// The result of a fold of keys whose largest is h and smallest m: the float of h (kKind > 0)
// or m, and *found = 1 unless one of them is a NaN's key.
template <int kKind>
SF_MATH_FN float sf_keys_extreme(int h, int m, int* found) {
  const int kInfKey = 0x7f800000, kMinusInfKey = (int)0x807fffff;
  *found = h <= kInfKey && m >= kMinusInfKey;
  const int key = kKind > 0 ? h : m;
  return SF_MATH_AS_FLOAT((unsigned int)(key ^ ((key >> 31) & 0x7fffffff)));  // its own inverse
}

// The max (kind 1) or min (kind -1) of load(first) .. load(first + n - 1), n >= 1, as sf_max /
// sf_min fold them, computed on the elements' order keys (sf_float_order: signed integers in the
// floats' order, -0 just below +0) with plain integer max and min, one instruction a vector
// instead of sf_max's masks (a fused softmax of rows of 128 in 0.78 of the time). Without a NaN
// the element with the largest (smallest) key is the result, bits and all, whatever the order.
// A NaN's key lies above +inf's or, negative, below -inf's: *found is then 0 and the caller folds
// the run again through Op::step, whose NaN payload depends on the order.
template <int kKind, class Load>
SF_MATH_FN float sf_reduce_extreme_keys(const Load& load, long long first, long long n,
                                        int* found) {
  const int kWidth = 2 * SF_REDUCE_LANES;
  int hi[kWidth], lo[kWidth];
  for (int l = 0; l < kWidth; ++l) hi[l] = lo[l] = sf_float_order(load(first));
  long long i = 0;
  for (; i + kWidth <= n; i += kWidth)
    for (int l = 0; l < kWidth; ++l) {
      const int k = sf_float_order(load(first + i + l));
      hi[l] = hi[l] > k ? hi[l] : k;
      lo[l] = lo[l] < k ? lo[l] : k;
    }
  for (; i < n; ++i) {
    const int k = sf_float_order(load(first + i));
    hi[0] = hi[0] > k ? hi[0] : k;
    lo[0] = lo[0] < k ? lo[0] : k;
  }
  // As a tree: GCC vectorizes a merge of lanes 1.. into lane 0 with loads that straddle the
  // lanes' stores (a store-forwarding stall in every row).
  for (int w = kWidth / 2; w > 0; w /= 2)
    for (int l = 0; l < w; ++l) {
      hi[l] = hi[l] > hi[l + w] ? hi[l] : hi[l + w];
      lo[l] = lo[l] < lo[l + w] ? lo[l] : lo[l + w];
    }
  const int h = hi[0], m = lo[0];
  return sf_keys_extreme<kKind>(h, m, found);
}

#if !defined(__CUDACC__) && !defined(__CUDACC_RTC__) && defined(__GNUC__)
// sf_reduce_extreme_keys over floats adjacent in memory, p[0] .. p[n - 1], as vectors of the
// target's width: loaded whole, keys and extremes in registers, the lanes merged by halves. The
// same value (the extreme of the same keys). sf_reduce_extreme_keys through a load function keeps
// its lanes in arrays that GCC stores and reloads around its tree: for rows of 128 floats this
// takes 0.55 of its time with AVX-512. Wider vectors than the target's go through memory (with
// AVX2, 16-key vectors took 1.4x the time of the arrays).
typedef int sf_keys16 __attribute__((vector_size(16 * sizeof(int))));
typedef int sf_keys8 __attribute__((vector_size(8 * sizeof(int))));
typedef int sf_keys4 __attribute__((vector_size(4 * sizeof(int))));
// Vectors go by reference: passed or returned by value, a vector wider than the target's is an
// ABI that GCC and Clang warn about (-Wpsabi).
template <int kMax, class V>
SF_MATH_FN void sf_keys_pick(V& a, const V& b) {
  a = kMax ? (a > b ? a : b) : (a < b ? a : b);
}
template <int kMax>
SF_MATH_FN int sf_keys_across(const sf_keys4& v) {
  sf_keys4 q = v;
  sf_keys_pick<kMax>(q, __builtin_shufflevector(q, q, 2, 3, 0, 1));
  sf_keys_pick<kMax>(q, __builtin_shufflevector(q, q, 1, 0, 3, 2));
  return q[0];
}
template <int kMax>
SF_MATH_FN int sf_keys_across(const sf_keys8& v) {
  sf_keys4 q = __builtin_shufflevector(v, v, 0, 1, 2, 3);
  sf_keys_pick<kMax>(q, __builtin_shufflevector(v, v, 4, 5, 6, 7));
  return sf_keys_across<kMax>(q);
}
template <int kMax>
SF_MATH_FN int sf_keys_across(const sf_keys16& v) {
  sf_keys8 h = __builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7);
  sf_keys_pick<kMax>(h, __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15));
  return sf_keys_across<kMax>(h);
}
#if defined(__AVX512F__)
typedef sf_keys16 sf_keys_vector;
#elif defined(__AVX2__)
typedef sf_keys8 sf_keys_vector;
#else
typedef sf_keys4 sf_keys_vector;
#endif
// The keys of the floats at p (sf_float_order of each), their extremes into hi and lo.
SF_MATH_FN void sf_keys_fold(const float* p, sf_keys_vector& hi, sf_keys_vector& lo) {
  sf_keys_vector v;
  __builtin_memcpy(&v, p, sizeof(v));
  v ^= (v >> 31) & 0x7fffffff;
  sf_keys_pick<1>(hi, v);
  sf_keys_pick<0>(lo, v);
}
template <int kKind>
SF_MATH_FN float sf_reduce_extreme_keys_at(const float* p, long long n, int* found) {
  const long long kWidth = sizeof(sf_keys_vector) / sizeof(int);
  int th = sf_float_order(p[0]), tl = th;
  sf_keys_vector hi0 = th - (sf_keys_vector){}, lo0 = hi0, hi1 = hi0, lo1 = hi0;
  long long i = 0;
  for (; i + 2 * kWidth <= n; i += 2 * kWidth) {
    sf_keys_fold(p + i, hi0, lo0);
    sf_keys_fold(p + i + kWidth, hi1, lo1);
  }
  if (i + kWidth <= n) {
    sf_keys_fold(p + i, hi0, lo0);
    i += kWidth;
  }
  for (; i < n; ++i) {
    const int k = sf_float_order(p[i]);
    th = th > k ? th : k;
    tl = tl < k ? tl : k;
  }
  sf_keys_pick<1>(hi0, hi1);
  sf_keys_pick<0>(lo0, lo1);
  const int hv = sf_keys_across<1>(hi0), lv = sf_keys_across<0>(lo0);
  const int h = hv > th ? hv : th, m = lv < tl ? lv : tl;
  return sf_keys_extreme<kKind>(h, m, found);
}
#endif

// load(first) .. load(first + n - 1) folded into the identity in the order fastest on the CPU,
// for an Op whose result does not depend on the order (Op::kAnyOrder): 4 x SF_REDUCE_LANES
// independent accumulators (a chain of dependent steps per vector register, not one), merged as
// a tree, then the rest; float max and min on their keys. CUDA folds in the template's order
// (its lanes are threads).
template <class Op, class Load>
SF_MATH_FN typename Op::acc sf_reduce_any_order(const Load& load, long long first, long long n) {
  typename Op::acc a = Op::identity();
  long long i = 0;
#if !defined(__CUDACC__) && !defined(__CUDACC_RTC__)
  if constexpr (sf_float_extreme<Op>::kind != 0) {
    if (n > 0) {
      int found;
      const float r = sf_reduce_extreme_keys<sf_float_extreme<Op>::kind>(load, first, n, &found);
      if (found) return r;
    }
  }
  const int kWidth = 4 * SF_REDUCE_LANES;
  if (n >= kWidth) {
    typename Op::acc lanes[kWidth];
    for (int l = 0; l < kWidth; ++l) lanes[l] = Op::identity();
    for (; i + kWidth <= n; i += kWidth)
      for (int l = 0; l < kWidth; ++l) lanes[l] = Op::step(lanes[l], load(first + i + l), 0);
    for (int w = kWidth / 2; w > 0; w /= 2)
      for (int l = 0; l < w; ++l) lanes[l] = Op::merge(lanes[l], lanes[l + w]);
    a = lanes[0];
  }
#endif
  for (; i < n; ++i) a = Op::step(a, load(first + i), 0);
  return a;
}

// Elements `from` .. n - 1 of a run folded one by one into `a` (the run's tail after its lanes).
template <class Op, class Load>
SF_MATH_FN typename Op::acc sf_reduce_tail(const Load& load, long long first, long long from,
                                           long long n, long long index0, typename Op::acc a) {
  for (long long i = from; i < n; ++i) a = Op::step(a, load(first + i), index0 + i);
  return a;
}

// Folds elements load(first) .. load(first + n - 1) into `a`, the first being element index0 of
// the reduction; `contiguous`: their loads are adjacent in memory (lanes pay off).
template <class Op, class Load>
SF_REDUCE_RUN_FN typename Op::acc sf_reduce_run(const Load& load, long long first, long long n,
                                                int contiguous, long long index0,
                                                typename Op::acc a) {
  if (Op::kAnyOrder) return Op::merge(a, sf_reduce_any_order<Op>(load, first, n));
  const long long span = sf_reduce_lane_span(contiguous, n);
  if (span) {
    typedef sf_lane_part<Op> P;
    typename Op::acc lanes[SF_REDUCE_LANES];
    for (int l = 0; l < SF_REDUCE_LANES; ++l) lanes[l] = Op::identity();
    if (P::kRounds == 1) {
      for (long long i = 0; i < span; i += SF_REDUCE_LANES)
        for (int l = 0; l < SF_REDUCE_LANES; ++l)
          lanes[l] = Op::step(lanes[l], load(first + i + l), index0 + i + l);
    } else {
      const long long chunk = (long long)P::kRounds * SF_REDUCE_LANES;
      typename P::held held = P::hold(lanes);
      for (long long c = 0; c < span; c += chunk) {
        const long long stop = span - c < chunk ? span : c + chunk;
        typename P::part parts[SF_REDUCE_LANES];
        for (int l = 0; l < SF_REDUCE_LANES; ++l) parts[l] = P::identity();
        for (long long i = c; i < stop; i += SF_REDUCE_LANES)
          for (int l = 0; l < SF_REDUCE_LANES; ++l)
            parts[l] = P::step(parts[l], load(first + i + l));
        P::absorb_all(held, parts);
      }
      P::release(held, lanes);
    }
    for (int l = 0; l < SF_REDUCE_LANES; ++l) a = Op::merge(a, lanes[l]);
  }
  return sf_reduce_tail<Op>(load, first, span, n, index0, a);
}

// Lane l of a run with sf_reduce_lane_span() = span > 0 on its own, as sf_reduce_run folds it:
// elements l, l + LANES, ... below span, from the identity. For kernels that fold a run's lanes
// in parallel (CUDA): merging lanes 0 .. LANES - 1 into `a` in order, then sf_reduce_tail from
// span, is sf_reduce_run.
template <class Op, class Load>
SF_MATH_FN typename Op::acc sf_reduce_lane(const Load& load, long long first, long long span,
                                           long long index0, int l) {
  typedef sf_lane_part<Op> P;
  typename Op::acc a = Op::identity();
  if (P::kRounds == 1) {
    for (long long i = l; i < span; i += SF_REDUCE_LANES)
      a = Op::step(a, load(first + i), index0 + i);
    return a;
  }
  const long long chunk = (long long)P::kRounds * SF_REDUCE_LANES;
  for (long long c = 0; c < span; c += chunk) {
    const long long stop = span - c < chunk ? span : c + chunk;
    typename P::part part = P::identity();
    for (long long i = c + l; i < stop; i += SF_REDUCE_LANES) part = P::step(part, load(first + i));
    a = P::absorb(a, part);
  }
  return a;
}

// One block of a reduction fed in pieces, for kernels that compute the reduced values chunk by
// chunk (fused reductions): the same order as sf_reduce_run over the block's n elements as one
// run, `contiguous` saying whether the unfused reduction reads them from adjacent memory (so
// whether it folds lanes). begin(), then push() pieces until n elements were pushed, then
// result().
template <class Op>
struct sf_reduce_fold {
  typedef sf_lane_part<Op> P;
  typename Op::acc lanes[SF_REDUCE_LANES];
  typename P::part parts[SF_REDUCE_LANES];  // the lanes' parts so far (P::kRounds > 1)
  typename Op::acc a;
  long long span;  // elements folded in lanes
  long long pos;   // elements pushed so far
  long long index0;

  SF_REDUCE_MEMBER_FN void begin(int contiguous, long long n, long long first_index) {
    span = sf_reduce_lane_span(contiguous, n);
    pos = 0;
    index0 = first_index;
    a = Op::identity();
    for (int l = 0; l < SF_REDUCE_LANES; ++l) lanes[l] = Op::identity();
    for (int l = 0; l < SF_REDUCE_LANES; ++l) parts[l] = P::identity();
  }
  // The next in_lanes elements, all below span, into the lanes' parts, each part into its lane
  // where its rounds end (as sf_reduce_run's chunks do). Returns in_lanes.
  template <class Load>
  SF_REDUCE_MEMBER_FN long long push_parts(const Load& load, long long in_lanes) {
    const long long rounds = span / SF_REDUCE_LANES;
    long long i = 0;
    // Whole rounds while aligned, a chunk's worth (or what this piece holds of it) at a time in
    // local parts (the loop vectorizes), then one element at a time.
    if ((pos & (SF_REDUCE_LANES - 1)) == 0) {
      typename P::held held = P::hold(lanes);
      while (i + SF_REDUCE_LANES <= in_lanes) {
        const long long round = (pos + i) / SF_REDUCE_LANES;
        long long to_end = P::kRounds - round % P::kRounds;
        if (to_end > rounds - round) to_end = rounds - round;
        const long long fit = (in_lanes - i) / SF_REDUCE_LANES;
        const long long take = to_end < fit ? to_end : fit;
        typename P::part p[SF_REDUCE_LANES];
        for (int l = 0; l < SF_REDUCE_LANES; ++l) p[l] = parts[l];
        for (long long k = 0; k < take; ++k, i += SF_REDUCE_LANES)
          for (int l = 0; l < SF_REDUCE_LANES; ++l) p[l] = P::step(p[l], load(i + l));
        if (take == to_end) {
          P::absorb_all(held, p);
          for (int l = 0; l < SF_REDUCE_LANES; ++l) p[l] = P::identity();
        }
        for (int l = 0; l < SF_REDUCE_LANES; ++l) parts[l] = p[l];
      }
      P::release(held, lanes);
    }
    for (; i < in_lanes; ++i) {
      const long long q = pos + i;
      const int l = (int)(q & (SF_REDUCE_LANES - 1));
      parts[l] = P::step(parts[l], load(i));
      const long long round = q / SF_REDUCE_LANES;
      if ((round + 1) % P::kRounds == 0 || round + 1 == rounds) {
        lanes[l] = P::absorb(lanes[l], parts[l]);
        parts[l] = P::identity();
      }
    }
    return i;
  }
  // Folds the next `count` elements, load(0) .. load(count - 1).
  template <class Load>
  SF_REDUCE_MEMBER_FN void push(const Load& load, long long count) {
    if (Op::kAnyOrder) {
      a = Op::merge(a, sf_reduce_any_order<Op>(load, 0, count));
      pos += count;
      return;
    }
    long long i = 0;
    if (pos < span) {
      const long long in_lanes = span - pos < count ? span - pos : count;
      if (P::kRounds > 1) {
        i = push_parts(load, in_lanes);
      } else {
        // Whole rounds of lanes while aligned (the loop vectorizes), then one element at a time.
        if ((pos & (SF_REDUCE_LANES - 1)) == 0)
          for (; i + SF_REDUCE_LANES <= in_lanes; i += SF_REDUCE_LANES)
            for (int l = 0; l < SF_REDUCE_LANES; ++l)
              lanes[l] = Op::step(lanes[l], load(i + l), index0 + pos + i + l);
        for (; i < in_lanes; ++i) {
          const int l = (int)((pos + i) & (SF_REDUCE_LANES - 1));
          lanes[l] = Op::step(lanes[l], load(i), index0 + pos + i);
        }
      }
      if (pos + i == span)
        for (int l = 0; l < SF_REDUCE_LANES; ++l) a = Op::merge(a, lanes[l]);
    }
    for (; i < count; ++i) a = Op::step(a, load(i), index0 + pos + i);
    pos += count;
  }
  SF_REDUCE_MEMBER_FN typename Op::acc result() const { return a; }
};

// The fold of one block of n elements adjacent in memory, p[0] .. p[n - 1] (what sf_reduce_fold
// gives when they are pushed in one piece; `contiguous` as there). Float max and min fold their
// keys as vectors on the CPU (sf_reduce_extreme_keys_at); the rest through the fold.
template <class T>
struct sf_is_float {
  static const int value = 0;
};
template <>
struct sf_is_float<float> {
  static const int value = 1;
};
template <class Op, class T>
SF_MATH_FN typename Op::acc sf_reduce_contiguous(const T* p, long long n, int contiguous,
                                                 long long index0) {
#if !defined(__CUDACC__) && !defined(__CUDACC_RTC__) && defined(__GNUC__)
  if constexpr (sf_float_extreme<Op>::kind != 0 && sf_is_float<T>::value) {
    if (n > 0) {
      int found;
      const float r = sf_reduce_extreme_keys_at<sf_float_extreme<Op>::kind>(p, n, &found);
      if (found) return Op::merge(Op::identity(), r);
    }
  }
#endif
  sf_reduce_fold<Op> f;
  f.begin(contiguous, n, index0);
  f.push([&](long long i) -> typename Op::value { return (typename Op::value)p[i]; }, n);
  return f.result();
}

// What a reduction stores, from its accumulator over `count` elements: mean the sum divided in
// double (sf_reduce_mean, then through float), argmax its index, the others the accumulator
// (a double through float). sf_reduce_out gives it in the type kernels hold values in (float for
// float dtypes; the output dtype's rounding is the kernel's), sf_reduce_bits as the 64 bits a
// kernel passes scalars in (a float's bits in the low half, integers as they are).
template <class Op>
SF_MATH_FN double sf_reduce_mean(typename Op::acc acc, long long count) {
  return (double)acc / (double)count;
}
SF_MATH_FN float sf_reduce_out(double a) { return (float)a; }
SF_MATH_FN float sf_reduce_out(float a) { return a; }
SF_MATH_FN long long sf_reduce_out(long long a) { return a; }
SF_MATH_FN int sf_reduce_out(int a) { return a; }
SF_MATH_FN unsigned char sf_reduce_out(unsigned char a) { return a; }
template <class T>
SF_MATH_FN long long sf_reduce_out(sf_argmax_acc<T> a) {
  return a.index;
}
SF_MATH_FN long long sf_reduce_bits(float v) { return (long long)SF_MATH_AS_UINT(v); }
SF_MATH_FN long long sf_reduce_bits(double v) { return (long long)SF_MATH_AS_ULL(v); }
SF_MATH_FN long long sf_reduce_bits(long long v) { return v; }
SF_MATH_FN long long sf_reduce_bits(int v) { return v; }
SF_MATH_FN long long sf_reduce_bits(unsigned char v) { return v; }

// The value a reduction with accumulator Op stores (value) and its mean over n elements (mean),
// in the type kernels hold them in: sf_reduce_out's, but for f64, whose double stays double (a
// float sum's double accumulator becomes float).
template <class Op>
struct sf_reduce_results {
  SF_MATH_FN auto value(typename Op::acc a) -> decltype(sf_reduce_out(a)) {
    return sf_reduce_out(a);
  }
  SF_MATH_FN float mean(typename Op::acc a, long long n) {
    return sf_reduce_out(sf_reduce_mean<Op>(a, n));
  }
};
template <>
struct sf_reduce_results<sf_sum_f64> {
  SF_MATH_FN double value(double a) { return a; }
  SF_MATH_FN double mean(double a, long long n) { return sf_reduce_mean<sf_sum_f64>(a, n); }
};
template <int kMax>
struct sf_reduce_results<sf_extreme_f64<kMax> > {
  SF_MATH_FN double value(double a) { return a; }
};

// How many blocks a reduction of n elements splits into.
SF_MATH_FN long long sf_reduce_blocks(long long n) {
  return (n + SF_REDUCE_BLOCK - 1) / SF_REDUCE_BLOCK;
}

// How many of a reduction's n elements block b holds.
SF_MATH_FN long long sf_reduce_block_len(long long n, long long b) {
  const long long left = n - b * SF_REDUCE_BLOCK;
  return left < SF_REDUCE_BLOCK ? left : SF_REDUCE_BLOCK;
}

// Block b of a reduction of n elements, folded from the identity run by run. The elements lie in
// `rank` (<= SF_REDUCE_MAX_RANK) dimensions, sizes[d] of them strides[d] apart, row-major; a run
// is a stretch along the last. load_at(offset) is the load of the run that starts `offset`
// elements into the data: its element i lies i * strides[rank - 1] further.
#define SF_REDUCE_MAX_RANK 8
template <class Dims>
SF_MATH_FN long long sf_reduce_offset(const long long* index, const Dims& strides, int rank) {
  long long offset = 0;
  for (int d = 0; d < rank; ++d) offset += index[d] * strides[d];
  return offset;
}
template <class Op, class LoadAt, class Dims>
SF_MATH_FN typename Op::acc sf_reduce_block(const LoadAt& load_at, int rank, const Dims& sizes,
                                            const Dims& strides, long long n, long long b) {
  typename Op::acc a = Op::identity();
  const long long start = b * SF_REDUCE_BLOCK, end = start + sf_reduce_block_len(n, b);
  if (start >= end) return a;
  // The position of `start`; the outermost index needs no division (start < n).
  long long index[SF_REDUCE_MAX_RANK];
  long long rest = start;
  for (int d = rank - 1; d > 0; --d) {
    index[d] = rest % sizes[d];
    rest /= sizes[d];
  }
  index[0] = rest;
  const int inner = rank - 1;
  const int contiguous = strides[inner] == 1;
  for (long long r = start; r < end;) {
    const long long left = sizes[inner] - index[inner];
    const long long len = left < end - r ? left : end - r;
    a = sf_reduce_run<Op>(load_at(sf_reduce_offset(index, strides, rank)), 0, len, contiguous, r,
                          a);
    r += len;
    index[inner] += len;
    for (int d = inner; d > 0 && index[d] == sizes[d]; --d) {
      index[d] = 0;
      ++index[d - 1];
    }
  }
  return a;
}

#endif  // STREAMFUSE_CORE_REDUCE_MATH_H_
