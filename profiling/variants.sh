# Sourced by the benchmarks that compare synchronous variants: variant_sets VARIANT prints
# the --set values (one per line) of
#   sync | bf16 | fp16                  gradients in f32 / 16 bits with error feedback
#   localH | dilocoH                    local SGD averaging every H steps / DiLoCo's
#                                       Nesterov outer step
#   localH_bf16 | dilocoH_bf16          the same with the changes in bf16
#   ..._wN (after any local or DiLoCo variant)  N synchronous warm-up steps first
#                                       (distributed.local_warmup_steps = N)
variant_sets() {
  local v=$1 h
  case $v in
    local*_w[0-9]* | diloco*_w[0-9]*)
      echo "distributed.local_warmup_steps=${v##*_w}"
      v=${v%_w*} ;;
  esac
  case $v in
    sync) ;;
    bf16 | fp16) echo "distributed.compression=\"$v\"" ;;
    local[0-9]* | diloco[0-9]*)
      h=${v#local} h=${h#diloco} h=${h%_bf16}
      echo "distributed.sync_every=$h"
      [ "${v#diloco}" = "$v" ] || echo 'distributed.outer="nesterov"'
      [ "${v%_bf16}" = "$v" ] || echo 'distributed.compression="bf16"' ;;
    *) echo "unknown variant $v (sync, bf16, fp16, localH, dilocoH, localH_bf16, dilocoH_bf16)" >&2
       return 2 ;;
  esac
}
