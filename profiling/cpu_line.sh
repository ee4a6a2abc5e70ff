# Sourced by the benchmarks: cpu_line prints the line each table names its machine by, e.g.
# "CPU: AMD EPYC (family 25, model 1), 2 cores; AVX2 FMA, no AVX-512". A virtual machine's
# model name is often only the vendor's ("AMD EPYC"), so family and model are given too; and
# the instruction sets the kernels choose between (#32 asks for both beside every table).
cpu_line() {
  local name family model flags isa="" f
  name=$(lscpu | sed -n 's/^Model name: *//p' | head -n 1)
  family=$(awk -F': *' '/^cpu family/ {print $2; exit}' /proc/cpuinfo)
  model=$(awk -F': *' '/^model[[:space:]]*:/ {print $2; exit}' /proc/cpuinfo)
  flags=" $(awk -F': *' '/^(flags|Features)[[:space:]]*:/ {print $2; exit}' /proc/cpuinfo) "
  for f in avx2:AVX2 fma:FMA avx512f:AVX-512F avx512_bf16:AVX512_BF16 avx512_fp16:AVX512_FP16 \
    amx_bf16:AMX-BF16 asimd:NEON sve:SVE; do
    [[ $flags == *" ${f%%:*} "* ]] && isa+="${isa:+ }${f#*:}"
  done
  [[ $flags == *" avx2 "* && $flags != *" avx512f "* ]] && isa+=", no AVX-512"
  printf 'CPU: %s%s, %s cores; %s\n' "${name:-unknown}" "${family:+ (family $family, model $model)}" \
    "$(nproc)" "${isa:-none of AVX2, AVX-512, NEON}"
}
