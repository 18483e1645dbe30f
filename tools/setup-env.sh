#!/usr/bin/env bash
# setup-env.sh: prints the Python interpreter that `make` should use, installing what is missing.
#
#   - $PYTHON set: use it as it is.
#   - python3 already imports numpy, pytest and torch (the GPU machine, which has no registry):
#     use it and install nothing.
#   - otherwise: a .venv with the package's test (and, with EXTRAS=demo, demo) extras from PyPI,
#     plus Debian's libopenblas-dev when it is missing and we may install.
# All chatter goes to stderr; stdout is only the interpreter path.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { echo "[setup] $*" >&2; }

if [ -n "${PYTHON:-}" ]; then
    echo "$PYTHON"
    exit 0
fi

need_apt=()
if ! ls /usr/include/x86_64-linux-gnu/openblas-pthread/cblas.h /usr/include/openblas/cblas.h >/dev/null 2>&1 &&
   ! ls /usr/include/*-linux-gnu/openblas-pthread/cblas.h >/dev/null 2>&1; then
    need_apt+=(libopenblas-dev)
fi
# Open MPI: the CPU engine of ampc.distributed and the launcher of its two-process tests
if ! command -v mpirun >/dev/null 2>&1; then
    need_apt+=(openmpi-bin libopenmpi-dev)
fi
if [ "${EXTRAS:-}" = demo ] && [ ! -d /usr/share/datasets/fashion-mnist ]; then
    need_apt+=(dataset-fashion-mnist)
fi

if [ ! -x .venv/bin/python ] && python3 -c "import numpy, pytest, torch" >/dev/null 2>&1; then
    log "python3 already has numpy, pytest and torch: using it, installing nothing"
    if [ ${#need_apt[@]} -gt 0 ]; then log "missing ${need_apt[*]}: building without them"; fi
    command -v python3
    exit 0
fi

if [ ${#need_apt[@]} -gt 0 ] && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    log "apt-get install ${need_apt[*]}"
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}") >&2 ||
        log "apt-get failed; continuing without ${need_apt[*]}"
fi

if [ ! -x .venv/bin/python ]; then
    log "creating .venv"
    python3 -m venv .venv >&2
fi
want="numpy pytest ml_dtypes torch setuptools nbclient nbformat ipykernel matplotlib mpi4py"
[ "${EXTRAS:-}" = demo ] && want="$want tqdm matplotlib"
if ! .venv/bin/python -c "import $(echo $want | tr ' ' ',')" >/dev/null 2>&1; then
    log "installing Python packages into .venv (torch is the test oracle only)"
    .venv/bin/python -m pip install -q --upgrade pip >&2 || true
    # Install the dependencies the project declares, without building the package yet.
    .venv/bin/python -m pip install -q setuptools wheel numpy pytest ml-dtypes "torch==2.13.0" >&2
    # the notebook test runs examples/notebooks through a real Jupyter kernel (nbclient + ipykernel)
    .venv/bin/python -m pip install -q nbclient nbformat ipykernel matplotlib >&2
    # ampc.distributed's MPI backend (needs Open MPI, from apt above)
    .venv/bin/python -m pip install -q mpi4py >&2 || log "mpi4py failed: the distributed tests will fail"
    [ "${EXTRAS:-}" = demo ] && .venv/bin/python -m pip install -q tqdm >&2
fi
# The CUDA build links cuBLAS/cuBLASLt; a toolkit without them (as on CI) takes them from PyPI's
# nvidia-cublas wheel, the one PyTorch's CUDA wheels use.
cuda_home="${CUDA_HOME:-/usr/local/cuda}"
if [ "${AMPC_CUDA:-1}" != 0 ] && [ -x "$cuda_home/bin/nvcc" ] && ! ls "$cuda_home"/lib64/libcublasLt.so* >/dev/null 2>&1 &&
   ! .venv/bin/python -c "import nvidia, glob, os, sys; sys.exit(not any(glob.glob(os.path.join(p, '*', 'lib', 'libcublasLt.so*')) for p in nvidia.__path__))" >/dev/null 2>&1; then
    log "installing nvidia-cublas into .venv (cuBLAS for the CUDA build)"
    .venv/bin/python -m pip install -q "nvidia-cublas==13.1.1.3" >&2 || log "nvidia-cublas failed: CUDA GEMM will be unavailable"
fi
echo "$PWD/.venv/bin/python"
