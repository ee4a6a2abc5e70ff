// The CPU backends compute with denormal floats (magnitude below 2^-126, about 1.2e-38)
// flushed to zero, on the calling thread and every OpenMP thread, as TensorFlow's CPU
// threads do. On x86-64 an instruction that meets a denormal operand or result otherwise
// takes a microcode assist: LeNet's dense1 weight gradient (oneDNN's AVX2 matmul) ran at
// 4.3 ms instead of 2.2 for the first 29 steps of synthetic training. Internal to
// src/kernels: both CPU factories call it, so the oneDNN and reference backends agree.
#pragma once

namespace hpdl {

// Sets flush-to-zero and denormals-are-zero (x86-64: MXCSR's FTZ and DAZ bits; arm64:
// FPCR's FZ bit, which does both) on the calling thread and on each thread of its OpenMP
// team; threads OpenMP starts later copy the calling thread's setting. Elsewhere a no-op.
void flush_denormals();

// Whether the calling thread flushes denormals (what flush_denormals sets).
bool flushes_denormals();

}  // namespace hpdl
