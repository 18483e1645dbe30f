#!/usr/bin/env bash
# gpu-check.sh: everything a GPU session runs, in one call (issue 6). Under 8 minutes on a
# 16-core machine with one GPU:
#   1. the environment (nvidia-smi, nvcc, Python, the PyTorch peer)
#   2. build with parallel nvcc jobs (AMPC_CUDA_ARCHS, default the GPU's own architecture)
#   3. import check: ampc.cuda.is_available() must be True
#   4. the whole pytest suite, sharded over parallel processes; the device-parametrised tests
#      run their "cuda" cases (CUDA compared with the CPU backend)
#   5. compute-sanitizer memcheck over a short AMP training loop (alongside step 4)
#   6. benchmarks/bench_cuda.py beside the PyTorch installed there (alone on the GPU)
# Logs, junit XML, results.md/json and summary.md go to $OUT (default build/gpu-check).
#
#   tools/gpu-check.sh            on the GPU machine
#   tools/gpu-check.sh --dry-run  here, without a GPU: the same steps on the CPU, the "cuda"
#                                 test cases run on the CPU (AMPC_TEST_CUDA_AS_CPU=1), tiny
#                                 benchmark sizes, no sanitizer. Proves the script, not CUDA.
#
# The GPU machine has no package registry: a test dependency missing there (ml_dtypes) is
# installed from build/gpu-wheels (fill it here with `tools/gpu-check.sh --fetch-wheels` and
# carry build/gpu-wheels along).
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

DRY=0
case "${1:-}" in
--dry-run) DRY=1 ;;
--fetch-wheels)
    mkdir -p build/gpu-wheels
    exec "${PYTHON:-python3}" -m pip download ml_dtypes --python-version "${GPU_PY:-3.12}" --only-binary=:all: \
        --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --no-deps -d build/gpu-wheels
    ;;
esac

OUT="${OUT:-$ROOT/build/gpu-check}"
mkdir -p "$OUT"
JOBS=$(nproc)
SUMMARY="$OUT/summary.md"
FAILED=0
T0=$(date +%s)

echo "# gpu-check $(date -u +%Y-%m-%dT%H:%MZ)$([ $DRY = 1 ] && echo ' (dry run, no GPU)')" >"$SUMMARY"
echo >>"$SUMMARY"
echo "| step | result | seconds |" >>"$SUMMARY"
echo "| --- | --- | ---: |" >>"$SUMMARY"

# record NAME RC SECONDS: one row of the summary table.
record() {
    local res="ok"
    [ "$2" != 0 ] && res="FAILED (rc $2)" && FAILED=1
    echo "| $1 | $res | $3 |" >>"$SUMMARY"
    echo "[gpu-check] $1: $res in $3 s" >&2
}

# run NAME LIMIT CMD...: runs a step with a time limit, output to $OUT/NAME.log.
run() {
    local name=$1 limit=$2 start rc
    shift 2
    start=$(date +%s)
    timeout "$limit" "$@" >"$OUT/$name.log" 2>&1
    rc=$?
    record "$name" "$rc" "$(($(date +%s) - start))"
    return $rc
}

PY=$(tools/setup-env.sh)
export PYTHONPATH="$ROOT/python${PYTHONPATH:+:$PYTHONPATH}"

# ---- 1. environment
{
    date -u
    nvidia-smi 2>&1 || echo "nvidia-smi: not available"
    "${CUDA_HOME:-/usr/local/cuda}/bin/nvcc" --version 2>&1 | tail -2
    "$PY" -c "import sys, numpy; print('python', sys.version.split()[0], 'numpy', numpy.__version__)"
    "$PY" -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'gpu', torch.cuda.is_available())" 2>&1
    echo "cpus $JOBS"
} >"$OUT/env.txt" 2>&1

if ! "$PY" -c "import ml_dtypes" >/dev/null 2>&1; then
    if ls build/gpu-wheels/*.whl >/dev/null 2>&1; then
        "$PY" -m pip install -q --no-index --no-deps --target "$ROOT/build/gpu-pylib" build/gpu-wheels/*.whl \
            >"$OUT/wheels.log" 2>&1
        export PYTHONPATH="$PYTHONPATH:$ROOT/build/gpu-pylib"
    fi
fi

# ---- 2. build
if [ $DRY = 1 ]; then ARCHS="${AMPC_CUDA_ARCHS:-90}"; else
    ARCHS="${AMPC_CUDA_ARCHS:-$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d . | tr -d ' ')}"
    ARCHS="${ARCHS:-90}"
fi
mkdir -p build
run build 420 env AMPC_JOBS="$JOBS" AMPC_CUDA_ARCHS="$ARCHS" flock build/.lock "$PY" setup.py -q build_ext --inplace

# ---- 3. import
if [ $DRY = 1 ]; then
    run import 60 "$PY" -c "import ampc; print('cuda available:', ampc.cuda.is_available())"
else
    run import 60 "$PY" -c "import ampc; assert ampc.cuda.is_available(), 'ampc sees no GPU'; print(ampc.cuda.get_device_name())"
fi

# ---- 4 + 5. tests (sharded) with the sanitizer alongside
if [ $DRY = 1 ]; then export AMPC_TEST_CUDA_AS_CPU=1; fi
SHARDS=$((JOBS / 2 > 8 ? 8 : (JOBS / 2 < 1 ? 1 : JOBS / 2)))
mapfile -t FILES < <(ls -S tests/test_*.py)
start=$(date +%s)
pids=()
for ((k = 0; k < SHARDS; k++)); do
    group=()
    for ((i = k; i < ${#FILES[@]}; i += SHARDS)); do group+=("${FILES[$i]}"); done
    [ ${#group[@]} = 0 ] && continue
    (OMP_NUM_THREADS=2 timeout 400 "$PY" -m pytest -q -p no:cacheprovider -rfE "${group[@]}" \
        --junitxml="$OUT/pytest-$k.xml" >"$OUT/pytest-$k.log" 2>&1
     echo $? >"$OUT/pytest-$k.rc") &
    pids+=($!)
done

SAN_START=$(date +%s)
if [ $DRY = 1 ]; then
    run smoke-train 120 "$PY" tools/gpu_smoke_train.py --device cpu
else
    SAN="${CUDA_HOME:-/usr/local/cuda}/bin/compute-sanitizer"
    command -v "$SAN" >/dev/null 2>&1 || SAN=$(command -v compute-sanitizer || true)
    if [ -n "$SAN" ]; then
        run memcheck 300 "$SAN" --tool memcheck --error-exitcode 9 "$PY" tools/gpu_smoke_train.py --steps 3
    else
        echo "compute-sanitizer not found" >"$OUT/memcheck.log"
        record "memcheck (compute-sanitizer not found; plain run)" 0 0
        run smoke-train 120 "$PY" tools/gpu_smoke_train.py
    fi
fi
for p in "${pids[@]}"; do wait "$p"; done
rc=0
for f in "$OUT"/pytest-*.rc; do [ "$(cat "$f")" != 0 ] && rc=1; done
record "pytest ($SHARDS shards)" $rc $(($(date +%s) - start))
"$PY" - "$OUT" >>"$SUMMARY" <<'EOF'
import glob, sys, xml.etree.ElementTree as ET
t = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
for f in glob.glob(sys.argv[1] + "/pytest-*.xml"):
    for s in ET.parse(f).getroot().iter("testsuite"):
        for k in t:
            t[k] += int(s.get(k, 0))
passed = t["tests"] - t["failures"] - t["errors"] - t["skipped"]
print(f"\npytest: {passed} passed, {t['failures']} failed, {t['errors']} errors, {t['skipped']} skipped\n")
EOF
grep -h -E "^(FAILED|ERROR) " "$OUT"/pytest-*.log >"$OUT/failures.txt" 2>/dev/null || true

# ---- 6. benchmarks (alone on the GPU)
if [ $DRY = 1 ]; then
    run bench 300 "$PY" benchmarks/bench_cuda.py --device cpu --quick --out "$OUT"
else
    run bench 300 "$PY" benchmarks/bench_cuda.py --device cuda --out "$OUT"
fi

echo >>"$SUMMARY"
echo "total $(($(date +%s) - T0)) s" >>"$SUMMARY"
[ -f "$OUT/results.md" ] && { echo; cat "$OUT/results.md"; } >>"$SUMMARY"
cat "$SUMMARY"
if [ -s "$OUT/failures.txt" ]; then
    echo
    echo "first failures ($(wc -l <"$OUT/failures.txt") in all, $OUT/failures.txt):"
    head -40 "$OUT/failures.txt"
fi
exit $FAILED
