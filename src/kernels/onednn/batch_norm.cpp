// The oneDNN batch normalisation kernel (see the class comment).
#include <vector>

#include "../element_math.hpp"
#include "primitive.hpp"

namespace hpdl::onednn {
namespace {

// oneDNN's batch normalisation on [N, C, S, 1] (nchw): forward training writes the batch
// mean and (biased) variance, which we keep for backward and fold into the running
// statistics (a C-long loop: oneDNN does not keep running statistics); inference uses the
// running ones as global statistics. oneDNN overwrites the scale/shift gradients, so they
// go through a scratch [2, C] and are added; a null dx goes to a scratch of x's size.
class DnnlBatchNorm final : public BatchNormKernel {
 public:
  DnnlBatchNorm(Engine& be, const BatchNormDims& d)
      : d_(d),
        dgamma_(static_cast<size_t>(d.channels)),
        dbeta_(static_cast<size_t>(d.channels)),
        unused_shift_(static_cast<size_t>(d.channels)),
        dx_scratch_(static_cast<size_t>(d.batch * d.channels * d.spatial)) {
    using dnnl::normalization_flags;
    build(be, "batch norm", [&] {
      const auto md = plain({d.batch, d.channels, d.spatial, 1}, tag::nchw);
      const auto cmd = plain({d.channels}, tag::x);
      const auto attr = user_scratchpad();
      const auto ss = normalization_flags::use_scale | normalization_flags::use_shift;
      // Training writes mean and variance, inference reads them: the same arguments.
      auto forward = [&](const dnnl::batch_normalization_forward::primitive_desc& pd) {
        return make_primitive<dnnl::batch_normalization_forward>(be, pd,
                                                                 {{DNNL_ARG_SRC, md},
                                                                  {DNNL_ARG_DST, md},
                                                                  {DNNL_ARG_SCALE, cmd},
                                                                  {DNNL_ARG_SHIFT, cmd},
                                                                  {DNNL_ARG_MEAN, cmd},
                                                                  {DNNL_ARG_VARIANCE, cmd}});
      };
      dnnl::batch_normalization_forward::primitive_desc train_pd(
          {dnnl::prop_kind::forward_training, md, d.eps, ss}, attr, be.engine);
      train_ = forward(train_pd);
      infer_ = forward({{dnnl::prop_kind::forward_inference, md, d.eps,
                         ss | normalization_flags::use_global_stats},
                        attr,
                        be.engine});
      dnnl::batch_normalization_backward::primitive_desc bwd_pd(
          {dnnl::prop_kind::backward, md, md, d.eps, ss}, attr, be.engine, train_pd);
      bwd_ = make_primitive<dnnl::batch_normalization_backward>(be, bwd_pd,
                                                                {{DNNL_ARG_SRC, md},
                                                                 {DNNL_ARG_DIFF_DST, md},
                                                                 {DNNL_ARG_SCALE, cmd},
                                                                 {DNNL_ARG_SHIFT, cmd},
                                                                 {DNNL_ARG_MEAN, cmd},
                                                                 {DNNL_ARG_VARIANCE, cmd},
                                                                 {DNNL_ARG_DIFF_SRC, md},
                                                                 {DNNL_ARG_DIFF_SCALE, cmd},
                                                                 {DNNL_ARG_DIFF_SHIFT, cmd}});
      return 0;
    });
  }
  void forward_training(const float* x, const float* gamma, const float* beta, float* mean,
                        float* var, float* running_mean, float* running_var, float* y) override {
    train_.run({{DNNL_ARG_SRC, x},
                {DNNL_ARG_DST, y},
                {DNNL_ARG_SCALE, gamma},
                {DNNL_ARG_SHIFT, beta},
                {DNNL_ARG_MEAN, mean},
                {DNNL_ARG_VARIANCE, var}});
    for (int64_t c = 0; c < d_.channels; ++c)
      math::update_running(mean[c], var[c], d_.batch * d_.spatial, d_.momentum, &running_mean[c],
                           &running_var[c]);
  }
  void forward_inference(const float* x, const float* gamma, const float* beta,
                         const float* running_mean, const float* running_var, float* y) override {
    infer_.run({{DNNL_ARG_SRC, x},
                {DNNL_ARG_DST, y},
                {DNNL_ARG_SCALE, gamma},
                {DNNL_ARG_SHIFT, beta},
                {DNNL_ARG_MEAN, running_mean},
                {DNNL_ARG_VARIANCE, running_var}});
  }
  void backward(const float* x, const float* dy, const float* gamma, const float* mean,
                const float* var, float* dx, float* dgamma, float* dbeta) override {
    bwd_.run({{DNNL_ARG_SRC, x},
              {DNNL_ARG_DIFF_DST, dy},
              {DNNL_ARG_SCALE, gamma},
              {DNNL_ARG_SHIFT, unused_shift_.data()},
              {DNNL_ARG_MEAN, mean},
              {DNNL_ARG_VARIANCE, var},
              {DNNL_ARG_DIFF_SRC, dx ? dx : dx_scratch_.data()},
              {DNNL_ARG_DIFF_SCALE, dgamma_.data()},
              {DNNL_ARG_DIFF_SHIFT, dbeta_.data()}});
    for (int64_t c = 0; c < d_.channels; ++c) dgamma[c] += dgamma_[c], dbeta[c] += dbeta_[c];
  }

 private:
  BatchNormDims d_;
  // oneDNN 2.6's backward asks for the shift argument although the math does not read it.
  AlignedFloats dgamma_, dbeta_, unused_shift_, dx_scratch_;
  Primitive train_, infer_, bwd_;
};

}  // namespace

std::unique_ptr<BatchNormKernel> make_batch_norm(Engine& be, const BatchNormDims& d) {
  return std::make_unique<DnnlBatchNorm>(be, d);
}

}  // namespace hpdl::onednn
