// Dense and convolution kernels on cblas_sgemm (see blas_gemm.hpp). Row-major throughout:
// x [N, I], w [O, I], y [N, O]; conv x [N, C, H, W], w [O, R = C K K], y [N, O, PQ = OH OW].
#include <cblas.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "../device_math.hpp"
#include "../element_math.hpp"
#include "blas_gemm.hpp"

namespace hpdl {
namespace {

// y [rows, cols] += b [cols] per row.
void add_bias_rows(float* y, const float* b, int64_t rows, int64_t cols) {
  for (int64_t n = 0; n < rows; ++n)
    for (int64_t o = 0; o < cols; ++o) y[n * cols + o] += b[o];
}

class BlasDense final : public DenseKernel {
 public:
  explicit BlasDense(const DenseDims& d) : d_(d) {}
  void forward(const float* x, const float* w, const float* b, float* y) override {
    const int64_t N = d_.batch, I = d_.in, O = d_.out;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, O, I, 1.0f, x, I, w, I, 0.0f, y, O);
    add_bias_rows(y, b, N, O);
  }
  void backward(const float* x, const float* w, const float* dy, float* dx, float* dw,
                float* db) override {
    const int64_t N = d_.batch, I = d_.in, O = d_.out;
    if (dx)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, I, O, 1.0f, dy, O, w, I, 0.0f, dx,
                  I);
    if (dw)
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, O, I, N, 1.0f, dy, O, x, I, 1.0f, dw, I);
    if (db) math::add_row_sums(dy, N, O, db);
  }

 private:
  DenseDims d_;
};

// Convolution as im2col and GEMMs over chunks of images (as the CUDA backend does over the
// whole batch): col [R, nb PQ] holds nb images side by side, so one GEMM covers them all
// and OpenBLAS spreads it over the threads. A chunk's col stays under kChunkFloats.
class BlasConv final : public ConvKernel {
 public:
  explicit BlasConv(const ConvDims& d) : s_(dmath::conv_shape(d)) {
    R_ = s_.C * s_.K * s_.K;
    PQ_ = s_.OH * s_.OW;
    CHW_ = s_.C * s_.H * s_.W;
    chunk_ = std::clamp<int64_t>(kChunkFloats / std::max<int64_t>(R_ * PQ_, 1), 1, s_.N);
    col_.resize(size_t(R_ * PQ_ * chunk_));
    t_.resize(size_t(s_.O * PQ_ * chunk_));
  }

  void forward(const float* x, const float* w, const float* b, float* y) override {
    for (int64_t n0 = 0; n0 < s_.N; n0 += chunk_) {
      const int64_t nb = std::min(chunk_, s_.N - n0), Q = nb * PQ_;
      im2col(x + n0 * CHW_, nb);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, s_.O, Q, R_, 1.0f, w, R_, col_.data(),
                  Q, 0.0f, t_.data(), Q);
#pragma omp parallel for collapse(2) if (nb * s_.O > 1)
      for (int64_t n = 0; n < nb; ++n)
        for (int64_t o = 0; o < s_.O; ++o) {
          const float* src = t_.data() + o * Q + n * PQ_;
          float* dst = y + ((n0 + n) * s_.O + o) * PQ_;
          for (int64_t p = 0; p < PQ_; ++p) dst[p] = src[p] + b[o];
        }
    }
  }

  void backward(const float* x, const float* w, const float* dy, float* dx, float* dw,
                float* db) override {
    if (db)
      for (int64_t n = 0; n < s_.N; ++n)
        for (int64_t o = 0; o < s_.O; ++o) {
          const float* row = dy + (n * s_.O + o) * PQ_;
          float sum = 0;
          for (int64_t p = 0; p < PQ_; ++p) sum += row[p];
          db[o] += sum;
        }
    if (!dw && !dx) return;
    for (int64_t n0 = 0; n0 < s_.N; n0 += chunk_) {
      const int64_t nb = std::min(chunk_, s_.N - n0), Q = nb * PQ_;
      // t = dy in the GEMM layout [O, nb PQ].
#pragma omp parallel for collapse(2) if (nb * s_.O > 1)
      for (int64_t n = 0; n < nb; ++n)
        for (int64_t o = 0; o < s_.O; ++o)
          std::memcpy(t_.data() + o * Q + n * PQ_, dy + ((n0 + n) * s_.O + o) * PQ_,
                      sizeof(float) * size_t(PQ_));
      if (dw) {
        im2col(x + n0 * CHW_, nb);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, s_.O, R_, Q, 1.0f, t_.data(), Q,
                    col_.data(), Q, 1.0f, dw, R_);
      }
      if (dx) {
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, R_, Q, s_.O, 1.0f, w, R_, t_.data(), Q,
                    0.0f, col_.data(), Q);
        col2im(dx + n0 * CHW_, nb);
      }
    }
  }

 private:
  static constexpr int64_t kChunkFloats = int64_t{1} << 23;  // 32 MiB of col

  // col_ [R, nb PQ] from nb images at x: row r = (c K + kh) K + kw, column n PQ + oh OW + ow;
  // zero in the padding.
  void im2col(const float* x, int64_t nb) {
    const int64_t Q = nb * PQ_;
#pragma omp parallel for collapse(2) if (nb * R_ > 64)
    for (int64_t n = 0; n < nb; ++n)
      for (int64_t r = 0; r < R_; ++r) {
        const int64_t kw = r % s_.K, kh = r / s_.K % s_.K, c = r / (s_.K * s_.K);
        const float* plane = x + (n * s_.C + c) * s_.H * s_.W;
        float* dst = col_.data() + r * Q + n * PQ_;
        for (int64_t oh = 0; oh < s_.OH; ++oh) {
          const int64_t ih = oh * s_.S - s_.P + kh;
          float* out = dst + oh * s_.OW;
          if (ih < 0 || ih >= s_.H) {
            std::fill(out, out + s_.OW, 0.0f);
            continue;
          }
          const float* in = plane + ih * s_.W;
          for (int64_t ow = 0; ow < s_.OW; ++ow) {
            const int64_t iw = ow * s_.S - s_.P + kw;
            out[ow] = iw >= 0 && iw < s_.W ? in[iw] : 0.0f;
          }
        }
      }
  }

  // dx (nb images) = the sum, for every input element, of the col_ entries that read it,
  // added in (kh, kw) order as dmath::col2im_value does.
  void col2im(float* dx, int64_t nb) const {
    const int64_t Q = nb * PQ_;
#pragma omp parallel for collapse(2) if (nb * s_.C > 1)
    for (int64_t n = 0; n < nb; ++n)
      for (int64_t c = 0; c < s_.C; ++c) {
        float* plane = dx + (n * s_.C + c) * s_.H * s_.W;
        std::fill(plane, plane + s_.H * s_.W, 0.0f);
        for (int64_t kh = 0; kh < s_.K; ++kh)
          for (int64_t kw = 0; kw < s_.K; ++kw) {
            const float* src = col_.data() + ((c * s_.K + kh) * s_.K + kw) * Q + n * PQ_;
            for (int64_t oh = 0; oh < s_.OH; ++oh) {
              const int64_t ih = oh * s_.S - s_.P + kh;
              if (ih < 0 || ih >= s_.H) continue;
              for (int64_t ow = 0; ow < s_.OW; ++ow) {
                const int64_t iw = ow * s_.S - s_.P + kw;
                if (iw >= 0 && iw < s_.W) plane[ih * s_.W + iw] += src[oh * s_.OW + ow];
              }
            }
          }
      }
  }

  dmath::ConvShape s_;
  int64_t R_, PQ_, CHW_, chunk_;
  std::vector<float> col_, t_;  // one chunk's im2col matrix and GEMM output
};

}  // namespace

std::unique_ptr<DenseKernel> make_blas_dense(const DenseDims& d) {
  return std::make_unique<BlasDense>(d);
}
std::unique_ptr<ConvKernel> make_blas_conv(const ConvDims& d) {
  return std::make_unique<BlasConv>(d);
}

}  // namespace hpdl
