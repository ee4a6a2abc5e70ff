// A convolution's weight and bias gradients over several input channels in NHWC
// (nhwc_weight_gradient.hpp). Per sample: the input copied into a zero-padded image, the
// output gradients into rows of whole vectors (the lanes past O stay 0). Then, a chunk of
// output rows at a time and for each window row kh, the sums dw[kh, j, o] (j = kw C + c)
// over the chunk's positions, a tile in registers per pass:
// - channel tiles: 6 window floats j (broadcast) x 2 vectors of channels o (12 sums; 12
//   rows x 1 vector for an odd last vector);
// - window tiles, for the O mod kLanes channels left over (where cheaper than a padded
//   vector): 2 channels (broadcast) x 4 vectors of window floats (read past the window's
//   end into the next pixel or the image's slack; those sums are dropped).
// The float sums of a few samples go into double totals (a sum over a whole batch's
// positions in float would lose digits).
#include "nhwc_weight_gradient.hpp"

#include <omp.h>

#include <algorithm>
#include <cstring>

#include "vector_width.hpp"

namespace hpdl {
namespace {

using Vec = FloatVec;
// The same vector read from any float (a window starts at any channel).
using LooseVec = Loose<kVectorFloats>::Floats;

constexpr int64_t kGroup = 8;           // samples summed in float before the double totals
constexpr int64_t kChunkBytes = 16384;  // a chunk's window rows and gradient columns: half of L1

// Where a tile reads, for output position (oh, ow) of a chunk: the broadcast floats at
// b + oh b_row + ow b_col (+ r), the vectors at v + oh v_row + ow v_col (+ i kLanes).
struct Reads {
  int64_t rows, cols;
  const float* b;
  int64_t b_row, b_col;
  const float* v;
  int64_t v_row, v_col;
};

// sums[r * stride + i] (R x V) += sum over the positions of b[r] * v[i].
template <int R, int V>
void tile(const Reads& at, Vec* sums, int64_t stride) {
  Vec s[R][V];
  for (int r = 0; r < R; ++r)
    for (int i = 0; i < V; ++i) s[r][i] = sums[r * stride + i];
  for (int64_t oh = 0; oh < at.rows; ++oh) {
    const float* b = at.b + oh * at.b_row;
    const float* v = at.v + oh * at.v_row;
    for (int64_t ow = 0; ow < at.cols; ++ow) {
      Vec vv[V];
      for (int i = 0; i < V; ++i)
        vv[i] = *reinterpret_cast<const LooseVec*>(v + ow * at.v_col + i * kLanes);
      for (int r = 0; r < R; ++r) {
        const float a = b[ow * at.b_col + r];
        for (int i = 0; i < V; ++i) s[r][i] += a * vv[i];
      }
    }
  }
  for (int r = 0; r < R; ++r)
    for (int i = 0; i < V; ++i) sums[r * stride + i] = s[r][i];
}

// `count` broadcast floats from the first, R at a time and the rest as one smaller tile.
template <int R, int V>
void tiles_over(int64_t count, Reads at, Vec* sums, int64_t stride) {
  int64_t r = 0;
  for (; r + R <= count; r += R, at.b += R) tile<R, V>(at, sums + r * stride, stride);
  if constexpr (R > 1)
    if (r < count) tiles_over<R - 1, V>(count - r, at, sums + r * stride, stride);
}

// The window tiles of `channels` left-over channels over up to 4 vectors of the window.
void window_tiles(int64_t vectors, int64_t channels, const Reads& at, Vec* sums, int64_t stride) {
  switch (std::min<int64_t>(vectors, 4)) {
    case 4:
      return tiles_over<2, 4>(channels, at, sums, stride);
    case 3:
      return tiles_over<2, 3>(channels, at, sums, stride);
    case 2:
      return tiles_over<2, 2>(channels, at, sums, stride);
    default:
      return tiles_over<2, 1>(channels, at, sums, stride);
  }
}

}  // namespace

bool NhwcWeightGradient::fits(const ConvDims& d) {
  return d.in_c > 1 && d.precision == Precision::kF32 && d.out_h() > 0 && d.out_w() > 0;
}

// One thread's buffers, made once: the sample zero-padded (only its inside is rewritten) with
// a vector of slack after it; its output gradients in rows of `row` floats; the float sums
// of a group of samples (channel tiles [kh][j][channel vector], window tiles
// [kh][channel][window vector], the bias's); the double totals [kh][j][o] and the bias's.
struct NhwcWeightGradient::Scratch {
  std::vector<float> padded_x, bias;
  std::vector<Vec> rows, channel_sums, window_sums;
  std::vector<double> totals, bias_totals;
};

NhwcWeightGradient::Layout NhwcWeightGradient::layout_of(const ConvDims& d) {
  Layout l;
  l.KC = d.kernel * d.in_c;
  l.PW = d.in_w + 2 * d.pad;
  l.vectors = d.out_c / kLanes;
  l.left = d.out_c % kLanes;
  l.window_vectors = (l.KC + kLanes - 1) / kLanes;
  // Channels left over: by window tiles where that costs less than a padded vector.
  if (l.left * l.window_vectors >= l.KC) l.vectors += 1, l.left = 0;
  l.row = (l.vectors + (l.left > 0)) * kLanes;
  return l;
}

NhwcWeightGradient::NhwcWeightGradient(const ConvDims& d, int threads) : d_(d), l_(layout_of(d)) {
  const Layout& l = l_;
  const int64_t OH = d.out_h(), OW = d.out_w(), K = d.kernel;
  const int64_t per_row = (OW * 2 * kLanes + d.stride * l.PW * d.in_c) * int64_t(sizeof(float));
  const int64_t rows = std::clamp<int64_t>(kChunkBytes / per_row, 1, OH);
  const int64_t chunks = (OH + rows - 1) / rows;
  chunk_rows_ = (OH + chunks - 1) / chunks;
  const int most = threads > 0 ? threads : omp_get_max_threads();
  scratch_.resize(size_t(std::max<int64_t>(1, std::min<int64_t>(most, d.batch))));
  for (auto& s : scratch_) {
    s = std::make_unique<Scratch>();
    s->padded_x.assign(size_t((d.in_h + 2 * d.pad) * l.PW * d.in_c + kLanes), 0.0f);
    s->rows.assign(size_t(OH * OW * l.row / kLanes), Vec{});
    s->channel_sums.assign(size_t(K * l.KC * l.vectors), Vec{});
    s->window_sums.assign(size_t(K * l.left * l.window_vectors), Vec{});
    s->bias.assign(size_t(d.out_c), 0.0f);
    s->totals.assign(size_t(K * l.KC * d.out_c), 0.0);
    s->bias_totals.assign(size_t(d.out_c), 0.0);
  }
}

NhwcWeightGradient::~NhwcWeightGradient() = default;

// A group's float sums into the thread's double totals, and the sums back to zero.
void NhwcWeightGradient::add_group(Scratch& s) const {
  const Layout& l = l_;
  const int64_t O = d_.out_c, main = l.vectors * kLanes;
  for (int64_t kj = 0; kj < d_.kernel * l.KC; ++kj) {
    double* total = s.totals.data() + kj * O;
    const float* c = reinterpret_cast<const float*>(s.channel_sums.data() + kj * l.vectors);
    for (int64_t o = 0; o < std::min(main, O); ++o) total[o] += c[o];
  }
  for (int64_t kh = 0; kh < d_.kernel; ++kh)
    for (int64_t o = 0; o < l.left; ++o) {
      const float* w = reinterpret_cast<const float*>(s.window_sums.data() +
                                                      (kh * l.left + o) * l.window_vectors);
      for (int64_t j = 0; j < l.KC; ++j) s.totals[size_t((kh * l.KC + j) * O + main + o)] += w[j];
    }
  for (int64_t o = 0; o < O; ++o) s.bias_totals[size_t(o)] += s.bias[size_t(o)];
  std::fill(s.channel_sums.begin(), s.channel_sums.end(), Vec{});
  std::fill(s.window_sums.begin(), s.window_sums.end(), Vec{});
  std::fill(s.bias.begin(), s.bias.end(), 0.0f);
}

void NhwcWeightGradient::accumulate(const float* x, const float* dy, float* dw, float* db) {
  const Layout& l = l_;
  const int64_t N = d_.batch, C = d_.in_c, H = d_.in_h, W = d_.in_w, O = d_.out_c, K = d_.kernel,
                S = d_.stride, P = d_.pad, OH = d_.out_h(), OW = d_.out_w();
  const int threads = omp_in_parallel() ? 1 : static_cast<int>(scratch_.size());
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num();
    Scratch& sc = *scratch_[size_t(t)];
    const int64_t n0 = N * t / threads, n1 = N * (t + 1) / threads;
    std::fill(sc.totals.begin(), sc.totals.end(), 0.0);
    std::fill(sc.bias_totals.begin(), sc.bias_totals.end(), 0.0);
    float* xp = sc.padded_x.data();
    float* g = reinterpret_cast<float*>(sc.rows.data());
    for (int64_t n = n0; n < n1; ++n) {
      for (int64_t h = 0; h < H; ++h)
        std::memcpy(xp + ((h + P) * l.PW + P) * C, x + (n * H + h) * W * C,
                    size_t(W * C) * sizeof(float));
      for (int64_t p = 0; p < OH * OW; ++p) {
        const float* from = dy + (n * OH * OW + p) * O;
        std::memcpy(g + p * l.row, from, size_t(O) * sizeof(float));
        for (int64_t o = 0; o < O; ++o) sc.bias[size_t(o)] += from[o];
      }
      for (int64_t oh0 = 0; oh0 < OH; oh0 += chunk_rows_) {
        const int64_t rows = std::min(chunk_rows_, OH - oh0);
        const float* gc = g + oh0 * OW * l.row;
        for (int64_t kh = 0; kh < K; ++kh) {
          const float* xk = xp + (oh0 * S + kh) * l.PW * C;
          Vec* cs = sc.channel_sums.data() + kh * l.KC * l.vectors;
          int64_t v = 0;
          for (; v + 2 <= l.vectors; v += 2)
            tiles_over<6, 2>(
                l.KC, {rows, OW, xk, S * l.PW * C, S * C, gc + v * kLanes, OW * l.row, l.row},
                cs + v, l.vectors);
          if (v < l.vectors)
            tiles_over<12, 1>(
                l.KC, {rows, OW, xk, S * l.PW * C, S * C, gc + v * kLanes, OW * l.row, l.row},
                cs + v, l.vectors);
          Vec* ws = sc.window_sums.data() + kh * l.left * l.window_vectors;
          for (int64_t w = 0; w < l.window_vectors; w += 4) {
            const Reads at{rows,         OW,    gc + l.vectors * kLanes,
                           OW * l.row,   l.row, xk + w * kLanes,
                           S * l.PW * C, S * C};
            window_tiles(l.window_vectors - w, l.left, at, ws + w, l.window_vectors);
          }
        }
      }
      if ((n - n0) % kGroup == kGroup - 1 || n + 1 == n1) add_group(sc);
    }
  }
  // Totals [kh][kw C + c][o] into dw [o][c][kh][kw] and db, the threads' in thread order.
  std::vector<double>& sum = scratch_[0]->totals;
  std::vector<double>& bias = scratch_[0]->bias_totals;
  for (int t = 1; t < threads; ++t) {
    for (size_t i = 0; i < sum.size(); ++i) sum[i] += scratch_[size_t(t)]->totals[i];
    for (size_t o = 0; o < bias.size(); ++o) bias[o] += scratch_[size_t(t)]->bias_totals[o];
  }
  for (int64_t kh = 0; kh < K; ++kh)
    for (int64_t kw = 0; kw < K; ++kw)
      for (int64_t c = 0; c < C; ++c)
        for (int64_t o = 0; o < O; ++o)
          dw[((o * C + c) * K + kh) * K + kw] +=
              float(sum[size_t((kh * l.KC + kw * C + c) * O + o)]);
  for (int64_t o = 0; o < O; ++o) db[o] += float(bias[size_t(o)]);
}

}  // namespace hpdl
