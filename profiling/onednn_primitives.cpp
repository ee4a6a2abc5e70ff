// LeNet's oneDNN primitives alone, each timed on its own buffers (the best of 5 rounds of 20
// calls after one warm-up): conv1 and conv2 forward, backward data and backward weights in
// NHWC (the layout hpdl's rule gives them), and the MLP's, HAR's and LeNet's dense products
// as matmuls. Written against both oneDNN APIs (2.x: Debian 12's 2.6; 3.x), so that
// profiling/bench_onednn_versions.sh can build it against each and compare, as a check of
// whether a newer oneDNN would make hpdl faster. Prints oneDNN's version, then a line per
// primitive, tab-separated: its name, ms per call, oneDNN's implementation, GFLOP/s.
#include <chrono>
#include <cstdio>
#include <string>
#include <unordered_map>

#include "oneapi/dnnl/dnnl.hpp"

namespace {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

dnnl::engine eng(dnnl::engine::kind::cpu, 0);
dnnl::stream strm(eng);

template <class F>
double best_ms(F f) {
  f();
  double best = 1e9;
  for (int r = 0; r < 5; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 20; ++i) f();
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    best = ms / 20 < best ? ms / 20 : best;
  }
  return best;
}

memory filled(const memory::desc& md) {
  memory m(md, eng);
  auto* p = static_cast<float*>(m.get_data_handle());
  for (size_t i = 0; i < md.get_size() / sizeof(float); ++i) p[i] = float(i % 17) * 0.01f - 0.08f;
  return m;
}

void report(const std::string& name, double ms, const char* impl, double flop) {
  std::printf("%s\t%.4f\t%s\t%.1f\n", name.c_str(), ms, impl, flop / ms / 1e6);
}

template <class P>
double run(P& prim, const std::unordered_map<int, memory>& args) {
  return best_ms([&] {
    prim.execute(strm, args);
    strm.wait();
  });
}

void conv(const char* name, memory::dim N, memory::dim C, memory::dim H, memory::dim O,
          memory::dim K, memory::dim P) {
  const memory::dim OH = H + 2 * P - K + 1;
  const memory::desc src({N, C, H, H}, dt::f32, tag::nhwc), dst({N, O, OH, OH}, dt::f32, tag::nhwc),
      wany({O, C, K, K}, dt::f32, tag::any), bias({O}, dt::f32, tag::a);
  const memory::dims st{1, 1}, pad{P, P};
  const auto fwd = dnnl::prop_kind::forward_training;
  const auto algo = dnnl::algorithm::convolution_direct;
#if DNNL_VERSION_MAJOR >= 3
  dnnl::convolution_forward::primitive_desc fpd(eng, fwd, algo, src, wany, bias, dst, st, pad, pad);
  dnnl::convolution_backward_data::primitive_desc dpd(eng, algo, src, wany, dst, st, pad, pad, fpd);
  dnnl::convolution_backward_weights::primitive_desc wpd(eng, algo, src, wany, bias, dst, st, pad,
                                                         pad, fpd);
#else
  dnnl::convolution_forward::primitive_desc fpd({fwd, algo, src, wany, bias, dst, st, pad, pad},
                                                eng);
  dnnl::convolution_backward_data::primitive_desc dpd({algo, src, wany, dst, st, pad, pad}, eng,
                                                      fpd);
  dnnl::convolution_backward_weights::primitive_desc wpd({algo, src, wany, bias, dst, st, pad, pad},
                                                         eng, fpd);
#endif
  const double flop = 2.0 * N * C * O * OH * OH * K * K;
  memory x = filled(src), y = filled(dst), dy = filled(dst), dx = filled(src), b = filled(bias),
         db = filled(bias), w = filled(fpd.weights_desc()), wd = filled(dpd.weights_desc()),
         dw = filled(wpd.diff_weights_desc());
  dnnl::convolution_forward f(fpd);
  dnnl::convolution_backward_data d(dpd);
  dnnl::convolution_backward_weights g(wpd);
  const std::string n = name;
  report(n + " forward",
         run(f, {{DNNL_ARG_SRC, x}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_BIAS, b}, {DNNL_ARG_DST, y}}),
         fpd.impl_info_str(), flop);
  report(n + " backward data",
         run(d, {{DNNL_ARG_DIFF_DST, dy}, {DNNL_ARG_WEIGHTS, wd}, {DNNL_ARG_DIFF_SRC, dx}}),
         dpd.impl_info_str(), flop);
  report(n + " backward weights",
         run(g, {{DNNL_ARG_SRC, x},
                 {DNNL_ARG_DIFF_DST, dy},
                 {DNNL_ARG_DIFF_WEIGHTS, dw},
                 {DNNL_ARG_DIFF_BIAS, db}}),
         wpd.impl_info_str(), flop);
}

void matmul(const char* name, memory::dim M, memory::dim K, memory::dim N) {
  const memory::desc a({M, K}, dt::f32, tag::ab), b({K, N}, dt::f32, tag::ba),
      c({M, N}, dt::f32, tag::ab);
#if DNNL_VERSION_MAJOR >= 3
  dnnl::matmul::primitive_desc pd(eng, a, b, c);
#else
  dnnl::matmul::primitive_desc pd({a, b, c}, eng);
#endif
  memory ma = filled(a), mb = filled(b), mc = filled(c);
  dnnl::matmul p(pd);
  report(name, run(p, {{DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_DST, mc}}),
         pd.impl_info_str(), 2.0 * M * K * N);
}

}  // namespace

int main() {
  std::printf("oneDNN %d.%d.%d\n", dnnl_version()->major, dnnl_version()->minor,
              dnnl_version()->patch);
  conv("LeNet conv1", 128, 1, 28, 20, 5, 2);
  conv("LeNet conv2", 128, 20, 14, 50, 5, 2);
  matmul("MLP dense1 32x784x64", 32, 784, 64);
  matmul("HAR projection 6400x16x64", 6400, 16, 64);
  matmul("LeNet dense1 128x2450x500", 128, 2450, 500);
}
