// c[M, N] = a[M, K] b[K, N] for a small product whose b stays the same over many calls (an
// LSTM's recurrent weights through the steps of a pass): b is copied once into column panels
// one or two vector registers wide, and each tile of rows x panel keeps its sums in registers.
// A general GEMM (oneDNN's) re-reads and re-lays b on every call, which for the HAR LSTMs'
// 50 x 16 by 16 x 64 costs more than the products. Every element is the sum over k in
// order (one multiply-add each), so a row's result does not depend on the other rows (a
// batch split over ranks gives the same bits). Private to kernels/.
#pragma once
#include <cstdint>

#include "aligned_floats.hpp"

namespace hpdl {

class PanelMatrix {
 public:
  PanelMatrix(int64_t k, int64_t n);
  // b(i, j) = src[i * row + j * col]: b or b^T of a row-major matrix.
  void pack(const float* src, int64_t row, int64_t col);
  // c[m, N] (row stride ldc) = a[m, K] (row stride lda) b; overwrites c. With threads > 1,
  // the rows in that many parts on OpenMP threads (the same numbers: rows are independent).
  void multiply(int64_t m, const float* a, int64_t lda, float* c, int64_t ldc,
                int threads = 1) const;

 private:
  void multiply_rows(int64_t m, const float* a, int64_t lda, float* c, int64_t ldc) const;

  int64_t k_, n_;
  int vectors_;           // per panel: 2, or 1 where N is narrower than two vectors
  AlignedFloats panels_;  // [panel][K][panel width], the last panel's extra columns 0
};

// c[M, N] (row stride ldc) += a[K, M]^T b[K, N] (row strides lda, ldb): the sum over k of
// the outer products of row k of a and row k of b, each tile of c summed in registers over
// all k and then added once (an LSTM's weight gradients a step at a time: K is the batch).
// Every element of c gets its k in order: the result does not depend on `threads`, over
// which the rows of c are shared.
void add_outer_products(int64_t K, int64_t M, int64_t N, const float* a, int64_t lda,
                        const float* b, int64_t ldb, float* c, int64_t ldc, int threads = 1);

}  // namespace hpdl
