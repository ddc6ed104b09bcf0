#!/usr/bin/env bash
# gotch-compat.sh generates third_party/gotch: a patched copy of gotch v0.7.0
# (the Go binding to libtorch) that builds against Debian's CPU libtorch 1.13.
# go.mod points at it with a replace directive. The copy is generated, never
# committed: gotch is not our code.
#
# What it changes in the pristine module (fetched through the Go module proxy):
#   1. libtch/lib.go: cgo flags for CPU and Debian's paths (gotch hard-codes
#      CUDA libraries, the pre-C++11 ABI and include paths under its folder).
#   2. libtch/torch_api_generated.cpp.h: every generated binding that does not
#      compile against this libtorch (ops removed or re-signed since 1.11)
#      becomes a function that raises "operation not available in this
#      libtorch" through gotch's own error path (PROTECT -> TorchErr).
#   3. ts/tensor-generated.go, ts/patch.go, ts/tensor.go: the result slot of
#      every op was C.malloc(0) and never freed (75-90 B leaked per op, and ops
#      with several outputs wrote past the block). It is now sized for eight
#      handles and freed on return. In-place ops replaced the receiver's
#      handle with a fresh one and leaked the old; they now free the duplicate
#      handle and keep the receiver's (both point at the same TensorImpl, so
#      copies of the receiver elsewhere stay valid).
#   4. libtch/*.go: C int results were read as 8-byte Go ints (garbage in the
#      upper half), e.g. AtGradSetEnabled's previous state; now converted.
#   5. init.go: importing gotch no longer creates $HOME/.cache/gotch (and no
#      longer exits the process when it cannot).
#
# It is idempotent: a stamp file records a hash of this script, the gotch
# version and the libtorch version, and a second run with the same inputs
# returns at once. `scripts/gotch-compat.sh --discover` compiles the pristine
# bindings against the installed libtorch and prints the functions that fail,
# which is how the list below was made (and what a new libtorch needs).
set -euo pipefail
cd "$(dirname "$0")/.."

GOTCH_MODULE=github.com/sugarme/gotch
GOTCH_VERSION=v0.7.0
DEST=third_party/gotch
STAMP=$DEST/.dragonx-compat-stamp
TORCH_API_INCLUDE=/usr/include/torch/csrc/api/include
TORCH_VERSION_H=$TORCH_API_INCLUDE/torch/version.h

die() { echo "gotch-compat: $*" >&2; exit 1; }

[ -f "$TORCH_VERSION_H" ] || die "libtorch headers not found ($TORCH_VERSION_H); install libtorch-dev (make setup does)"
torch_version=$(sed -n 's/^#define TORCH_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\)$/\2/p' "$TORCH_VERSION_H" | paste -sd.)
[ -n "$torch_version" ] || die "cannot read the libtorch version from $TORCH_VERSION_H"

# Generated bindings of gotch v0.7.0 that do not compile against libtorch
# 1.13 (found with --discover against Debian's 1.13.1+dfsg-4, which reports
# itself as 1.13.0 in version.h).
stubs_1_13="atg__cat atg__cat_out atg__det_lu_based_helper
atg__det_lu_based_helper_backward_helper atg__linalg_inv_out_helper_
atg__linalg_qr_helper atg__s_where atg__segment_reduce_backward
atg__solve_helper atg__weight_norm_cuda_interface
atg__weight_norm_cuda_interface_backward atg_arange_start_out
atg_bernoulli_out atg_binary_cross_entropy_with_logits_backward
atg_col2im_backward atg_col2im_backward_grad_input atg_eig atg_eig_e
atg_grid_sampler_3d_backward atg_im2col_backward
atg_im2col_backward_grad_input atg_kl_div_backward atg_l1_loss_backward
atg_l1_loss_backward_grad_input atg_l1_loss_out atg_lstsq atg_lstsq_x
atg_matrix_rank atg_matrix_rank_tol atg_max_unpool2d_backward
atg_max_unpool2d_backward_grad_input atg_max_unpool3d_backward
atg_max_unpool3d_backward_grad_input atg_nansum atg_normal
atg_segment_reduce atg_solve atg_solve_solution"

# gotch_dir prints the pristine module's folder, downloading it through the
# module proxy when the module cache does not have it. It runs outside any
# module so that our own go.mod (and its replace) play no part.
gotch_dir() {
  local json dir
  json=$(cd / && GOFLAGS= GO111MODULE=on go mod download -json "$GOTCH_MODULE@$GOTCH_VERSION") ||
    die "go mod download $GOTCH_MODULE@$GOTCH_VERSION failed: $json"
  dir=$(printf '%s\n' "$json" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')
  [ -n "$dir" ] && [ -d "$dir" ] || die "go mod download gave no module folder: $json"
  printf '%s\n' "$dir"
}

# discover compiles the pristine bindings and prints the generated functions
# the compiler rejects, one per line.
discover() {
  local src work
  src=$(gotch_dir)
  work=$(mktemp -d)
  trap 'rm -rf "$work"' RETURN
  cp "$src"/libtch/*.h "$src"/libtch/*.cpp "$work"/
  chmod -R u+w "$work"
  (cd "$work" && g++ -std=c++17 -fsyntax-only -w -fmax-errors=0 -I. -I"$TORCH_API_INCLUDE" torch_api.cpp >errors.txt 2>&1) || true
  grep 'error:' "$work/errors.txt" | grep -o 'torch_api_generated\.cpp\.h:[0-9]*' | cut -d: -f2 | sort -n -u |
    while read -r line; do
      head -n "$line" "$work/torch_api_generated.cpp.h" | grep -E '^[a-z].* atg_[A-Za-z0-9_]+\(' | tail -n 1 |
        sed -E 's/^.* (atg_[A-Za-z0-9_]+)\(.*/\1/'
    done | sort -u
  if grep 'error:' "$work/errors.txt" | grep -qv 'torch_api_generated\.cpp\.h'; then
    echo "gotch-compat: errors outside the generated bindings (not handled by stubs):" >&2
    grep 'error:' "$work/errors.txt" | grep -v 'torch_api_generated\.cpp\.h' >&2
  fi
}

if [ "${1:-}" = "--discover" ]; then
  discover
  exit 0
fi
[ $# -eq 0 ] || die "usage: scripts/gotch-compat.sh [--discover]"

want="script $(sha256sum "$0" | cut -d' ' -f1) gotch $GOTCH_VERSION libtorch $torch_version"
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ]; then
  exit 0
fi

case "$torch_version" in
1.13.*) stubs=$stubs_1_13 ;;
*)
  echo "gotch-compat: libtorch $torch_version has no known stub list; discovering it (about 20 s)"
  stubs=$(discover)
  ;;
esac

echo "gotch-compat: generating $DEST (gotch $GOTCH_VERSION for libtorch $torch_version)"
src=$(gotch_dir)
mkdir -p third_party
tmp=$(mktemp -d third_party/.gotch.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
# example/ (60 MB of data) and gen/ (the OCaml generator) are not needed.
tar -C "$src" --exclude=./example --exclude=./gen -cf - . | tar -C "$tmp" -xf -
chmod -R u+w "$tmp"

# expect FILE COUNT PERL-SUBSTITUTION applies the substitution to FILE and
# fails unless it matched exactly COUNT times, so a drifted source is caught.
expect() {
  local file=$1 want=$2 expr=$3 got
  got=$(perl -0777 -i -pe "\$n += ($expr); END { print STDERR \$n+0 }" "$file" 2>&1 >/dev/null) ||
    die "patching $file failed: $got"
  [ "$got" = "$want" ] || die "patching $file: expected $want matches of $expr, got $got"
}

# 1. cgo flags: CPU only, Debian's include and library paths, C++11 ABI.
cat >"$tmp/libtch/lib.go" <<'EOF'
package libtch

// Generated by dragonx scripts/gotch-compat.sh: CPU libtorch from Debian
// (headers under /usr/include, libraries on the default search path).

// #cgo LDFLAGS: -lstdc++ -ltorch -lc10 -ltorch_cpu
// #cgo CFLAGS: -I${SRCDIR} -O3 -w
// #cgo CXXFLAGS: -std=c++17 -I${SRCDIR} -I/usr/include/torch/csrc/api/include -O3 -w
import "C"
EOF

# 2. Stubs for the bindings this libtorch cannot compile.
nstubs=$(printf '%s\n' $stubs | grep -c .)
STUBS="$stubs" perl -0777 -i -pe '
  BEGIN { %stub = map { $_ => 1 } split /\s+/, $ENV{STUBS} }
  sub body {
    my ($sig, $name, $all) = @_;
    return $all unless $stub{$name};
    $n++;
    my $ret = $sig =~ /^void / ? "" : "  return 0;\n";
    return "$sig  PROTECT(\n    throw std::runtime_error(\"$name: operation not available in this libtorch"
      . " (gotch v0.7.0 targets 1.11; disabled by dragonx scripts/gotch-compat.sh)\");\n  )\n$ret\x7d\n";
  }
  s{^((?:void|int|int64_t|double|tensor|scalar) (atg_\w+)\([^\n]*\) \{\n).*?^\}\n}{body($1, $2, $&)}gmse;
  END { print STDERR $n + 0, "\n" }
' "$tmp/libtch/torch_api_generated.cpp.h" 2>"$tmp/.stubs" ||
  die "stubbing failed: $(cat "$tmp/.stubs")"
[ "$(cat "$tmp/.stubs")" = "$nstubs" ] || die "stubbed $(cat "$tmp/.stubs") of $nstubs bindings; the list does not match gotch's source"
rm -f "$tmp/.stubs"

# 3. The per-op result slot: sized, and freed when the wrapper returns.
alloc='s{^(\s*)(ptr|ctensorPtr0) := \(\*lib\.Ctensor\)\(unsafe\.Pointer\(C\.malloc\(0\)\)\)[ \t]*$}{$1$2 := (*lib.Ctensor)(unsafe.Pointer(C.malloc(64))) // room for 8 output handles\n$1defer C.free(unsafe.Pointer($2))}gm'
expect "$tmp/ts/tensor-generated.go" 1820 "$alloc"
expect "$tmp/ts/patch.go" 1 "$alloc"
expect "$tmp/ts/tensor.go" 1 "$alloc"
#    In-place ops: keep the receiver's handle, free the duplicate.
expect "$tmp/ts/tensor-generated.go" 254 's{^(\s*)ts\.ctensor = \*ptr[ \t]*$}{$1lib.AtFree(*ptr) // in-place: same TensorImpl as ts; free the duplicate handle}gm'

# 4. C int results read as Go int.
expect "$tmp/libtch/c-generated.go" 25 's{\*\(\*int\)\(unsafe\.Pointer\(&cResult\)\)}{int(cResult)}g'
expect "$tmp/libtch/tensor.go" 2 's{\*\(\*int\)\(unsafe\.Pointer\(&(cint|cretVal)\)\)}{int($1)}g'

# 5. No directory creation (or process exit) at import time.
expect "$tmp/init.go" 1 's{\n\tif _, err := os\.Stat\(CachedDir\); os\.IsNotExist\(err\) \{\n.*?\n\t\}\n}{\n}s'
perl -0777 -i -pe 's{\n\t"log"\n}{\n}' "$tmp/init.go"

gofmt -l "$tmp/init.go" >/dev/null || die "patched init.go does not parse"
printf '%s\n' "$want" >"$tmp/.dragonx-compat-stamp"
rm -rf "$DEST"
mv "$tmp" "$DEST"
trap - EXIT
echo "gotch-compat: done ($nstubs bindings stubbed)"
