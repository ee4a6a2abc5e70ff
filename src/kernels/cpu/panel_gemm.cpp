// The panel product and the sums of outer products (panel_gemm.hpp): GCC vector types as
// wide as the build's registers (AVX-512, AVX2 or 128-bit SSE / NEON), tiles of MR rows by
// one panel of one or two vectors.
#include "panel_gemm.hpp"

#include <algorithm>
#include <cstring>

#include "hpdl/core/error.hpp"
#include "vector_width.hpp"

namespace hpdl {
namespace {

constexpr int kWidth = kVectorFloats;
using Vec = FloatVec;

// Rows of a tile: the sums of R rows x NV vectors, a broadcast and NV loads of b fit in the
// 16 registers of AVX2 (12 sums); AVX-512 and NEON have 32.
constexpr int rows_per_tile(int vectors) { return vectors == 2 ? 6 : 12; }

// c[R, cols] = a[R, K] panel[K, NV * kWidth], the first `cols` columns stored.
template <int R, int NV>
void tile(int64_t K, const float* a, int64_t lda, const float* panel, float* c, int64_t ldc,
          int cols) {
  Vec sum[R][NV];
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < NV; ++v) sum[r][v] = Vec{};
  for (int64_t k = 0; k < K; ++k) {
    Vec b[NV];
    for (int v = 0; v < NV; ++v) std::memcpy(&b[v], panel + (k * NV + v) * kWidth, sizeof(Vec));
    for (int r = 0; r < R; ++r) {
      const float s = a[r * lda + k];
      for (int v = 0; v < NV; ++v) sum[r][v] += s * b[v];
    }
  }
  if (cols == NV * kWidth) {
    for (int r = 0; r < R; ++r)
      for (int v = 0; v < NV; ++v) std::memcpy(c + r * ldc + v * kWidth, &sum[r][v], sizeof(Vec));
    return;
  }
  for (int r = 0; r < R; ++r) std::memcpy(c + r * ldc, &sum[r][0], size_t(cols) * sizeof(float));
}

// The last R or fewer rows of a panel, as one tile of exactly `rows` rows (0 < rows <= R).
template <int R, int NV>
void last_rows(int64_t rows, int64_t K, const float* a, int64_t lda, const float* panel, float* c,
               int64_t ldc, int cols) {
  if constexpr (R > 0) {
    if (rows == R) return tile<R, NV>(K, a, lda, panel, c, ldc, cols);
    last_rows<R - 1, NV>(rows, K, a, lda, panel, c, ldc, cols);
  }
}

// Every tile of one panel: whole tiles of MR rows, then the rows left as one smaller tile.
template <int NV>
void panel_rows(int64_t m, int64_t K, const float* a, int64_t lda, const float* panel, float* c,
                int64_t ldc, int cols) {
  constexpr int MR = rows_per_tile(NV);
  int64_t i = 0;
  for (; i + MR <= m; i += MR) tile<MR, NV>(K, a + i * lda, lda, panel, c + i * ldc, ldc, cols);
  if (i < m) last_rows<MR - 1, NV>(m - i, K, a + i * lda, lda, panel, c + i * ldc, ldc, cols);
}

// f(first, end) for parts of the rows [0, m) on up to `threads` OpenMP threads (one part:
// the calling thread), each part starting at a multiple of either tile's rows.
template <typename F>
void in_row_parts(int64_t m, int threads, const F& f) {
  constexpr int64_t kWholeTiles = 12;
  const int64_t parts = std::min<int64_t>(threads, (m + kWholeTiles - 1) / kWholeTiles);
  if (parts <= 1) return f(0, m);
#pragma omp parallel for num_threads(parts)
  for (int64_t p = 0; p < parts; ++p) {
    const int64_t first = m * p / parts / kWholeTiles * kWholeTiles;
    const int64_t end = p + 1 == parts ? m : m * (p + 1) / parts / kWholeTiles * kWholeTiles;
    f(first, end);
  }
}

}  // namespace

PanelMatrix::PanelMatrix(int64_t k, int64_t n) : k_(k), n_(n), vectors_(n >= 2 * kWidth ? 2 : 1) {
  HPDL_REQUIRE(k > 0 && n > 0, "panel product: empty matrix");
  const int64_t width = vectors_ * kWidth, panels = (n + width - 1) / width;
  panels_.assign(size_t(panels * k * width), 0.0f);
}

void PanelMatrix::pack(const float* src, int64_t row, int64_t col) {
  const int64_t width = vectors_ * kWidth;
  for (int64_t j0 = 0; j0 < n_; j0 += width) {
    float* panel = panels_.data() + j0 * k_;
    const int64_t cols = std::min(width, n_ - j0);
    for (int64_t i = 0; i < k_; ++i)
      for (int64_t j = 0; j < cols; ++j) panel[i * width + j] = src[i * row + (j0 + j) * col];
  }
}

void PanelMatrix::multiply(int64_t m, const float* a, int64_t lda, float* c, int64_t ldc,
                           int threads) const {
  in_row_parts(m, threads, [&](int64_t first, int64_t end) {
    multiply_rows(end - first, a + first * lda, lda, c + first * ldc, ldc);
  });
}

void PanelMatrix::multiply_rows(int64_t m, const float* a, int64_t lda, float* c,
                                int64_t ldc) const {
  const int64_t width = vectors_ * kWidth;
  for (int64_t j0 = 0; j0 < n_; j0 += width) {
    const float* panel = panels_.data() + j0 * k_;
    const int cols = int(std::min(width, n_ - j0));
    if (vectors_ == 2)
      panel_rows<2>(m, k_, a, lda, panel, c + j0, ldc, cols);
    else
      panel_rows<1>(m, k_, a, lda, panel, c + j0, ldc, cols);
  }
}

namespace {

// c[R, cols] += sum over k of a[k, 0..R)^T b[k, 0..cols): the tile's sums in registers over
// all k, added to c once. A partial panel (cols < NV * kWidth) reads each row of b through a
// zero-padded copy; a whole one reads whole vectors (with the copy in the same loop, GCC
// kept the sums in memory: 3x slower).
template <int R, int NV, bool kPartial>
void outer_tile(int64_t K, const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
                int64_t ldc, int cols) {
  Vec sum[R][NV];
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < NV; ++v) sum[r][v] = Vec{};
  for (int64_t k = 0; k < K; ++k) {
    Vec bv[NV];
    if constexpr (kPartial) {
      float row[NV * kWidth] = {};
      std::memcpy(row, b + k * ldb, size_t(cols) * sizeof(float));
      std::memcpy(bv, row, sizeof row);
    } else {
      for (int v = 0; v < NV; ++v) std::memcpy(&bv[v], b + k * ldb + v * kWidth, sizeof(Vec));
    }
    for (int r = 0; r < R; ++r) {
      const float s = a[k * lda + r];
      for (int v = 0; v < NV; ++v) sum[r][v] += s * bv[v];
    }
  }
  for (int r = 0; r < R; ++r) {
    if constexpr (kPartial) {
      float out[NV * kWidth];
      std::memcpy(out, &sum[r][0], sizeof out);
      for (int j = 0; j < cols; ++j) c[r * ldc + j] += out[j];
    } else {
      for (int v = 0; v < NV; ++v) {
        Vec row;
        std::memcpy(&row, c + r * ldc + v * kWidth, sizeof(Vec));
        row += sum[r][v];
        std::memcpy(c + r * ldc + v * kWidth, &row, sizeof(Vec));
      }
    }
  }
}

template <int R, int NV, bool kPartial>
void outer_last_rows(int64_t rows, int64_t K, const float* a, int64_t lda, const float* b,
                     int64_t ldb, float* c, int64_t ldc, int cols) {
  if constexpr (R > 0) {
    if (rows == R) return outer_tile<R, NV, kPartial>(K, a, lda, b, ldb, c, ldc, cols);
    outer_last_rows<R - 1, NV, kPartial>(rows, K, a, lda, b, ldb, c, ldc, cols);
  }
}

// The rows [first, end) of c, a tile of MR rows (fewer at the end) at a time, and for each
// tile every panel of columns: the tile's rows of a are read again while in the cache.
template <int NV>
void outer_rows(int64_t first, int64_t end, int64_t K, int64_t N, const float* a, int64_t lda,
                const float* b, int64_t ldb, float* c, int64_t ldc) {
  constexpr int MR = rows_per_tile(NV);
  constexpr int64_t kWidthNV = NV * kWidth;
  for (int64_t i = first; i < end; i += MR) {
    const int64_t rows = std::min<int64_t>(MR, end - i);
    for (int64_t j0 = 0; j0 < N; j0 += kWidthNV) {
      const int cols = int(std::min(kWidthNV, N - j0));
      if (cols == kWidthNV)
        outer_last_rows<MR, NV, false>(rows, K, a + i, lda, b + j0, ldb, c + i * ldc + j0, ldc,
                                       cols);
      else
        outer_last_rows<MR, NV, true>(rows, K, a + i, lda, b + j0, ldb, c + i * ldc + j0, ldc,
                                      cols);
    }
  }
}

}  // namespace

void add_outer_products(int64_t K, int64_t M, int64_t N, const float* a, int64_t lda,
                        const float* b, int64_t ldb, float* c, int64_t ldc, int threads) {
  in_row_parts(M, threads, [&](int64_t first, int64_t end) {
    if (N >= 2 * kWidth)
      outer_rows<2>(first, end, K, N, a, lda, b, ldb, c, ldc);
    else
      outer_rows<1>(first, end, K, N, a, lda, b, ldb, c, ldc);
  });
}

}  // namespace hpdl
