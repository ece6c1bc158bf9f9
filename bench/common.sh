# Sourced by bench/run*.sh: what the core-against-PyTorch runs share.

# Appends two sides' outputs to $all, $2 first when $1 is odd, $3 first when
# it is even: the sides alternate so neither always runs on a warm machine.
bench_alternate() {
  if (($1 % 2)); then all+="$2"$'\n'"$3"$'\n'; else all+="$3"$'\n'"$2"$'\n'; fi
}

# The load average's three figures, printed with the results.
bench_load() { cut -d' ' -f1-3 /proc/loadavg; }

# "model name, N cores, AVX2, no AVX-512": the machine a figure comes from.
bench_machine() {
  local avx="AVX2, no AVX-512"
  grep -qw avx512f /proc/cpuinfo && avx="AVX-512"
  echo "$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1), $(nproc) cores, $avx"
}

# The awk rules a table of rates starts with: the kernels OpenBLAS chose
# (kernels), the best 1024-cube sgemm rate of the run per thread count
# (sg[threads]), and other short lines passed over.
bench_awk_sgemm='
$1 == "kernels" { kernels = $2; next }
NF < 4 && $1 != "sgemm" { next }
$1 == "sgemm" { if ($3 > sg[$2]) sg[$2] = $3; next }
'
