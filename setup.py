"""Build of ampc: one extension, ampc._C, from the C core, the CPU kernels, the binding layer
and (when nvcc is found and AMPC_CUDA is not 0) the CUDA backend.

Environment:
  AMPC_CUDA=0        CPU-only build even where nvcc exists
  CUDA_HOME          where the CUDA toolkit is (else /usr/local/cuda, else nvcc on PATH)
  AMPC_BLAS=0        do not link a CBLAS (float32 GEMM uses ampc's blocked C kernel)
  AMPC_DEBUG=1       -O0 -g and sanitizer-friendly flags
  AMPC_JOBS=N        parallel compile jobs (default: number of CPUs)
"""
import glob
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

from setuptools import Extension, find_packages, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))


def find_cuda():
    if os.environ.get("AMPC_CUDA", "1") == "0":
        return None
    for home in (os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
        if home and os.path.exists(os.path.join(home, "bin", "nvcc")):
            return home
    nvcc = shutil.which("nvcc")
    if nvcc:
        return os.path.dirname(os.path.dirname(os.path.realpath(nvcc)))
    return None


def find_cblas():
    """Debian's OpenBLAS (libopenblas-dev). Returns (include_dirs, libraries) or None."""
    if os.environ.get("AMPC_BLAS", "1") == "0":
        return None
    for inc in ("/usr/include/x86_64-linux-gnu/openblas-pthread", "/usr/include/aarch64-linux-gnu/openblas-pthread",
                "/usr/include/openblas", "/usr/include/x86_64-linux-gnu", "/usr/include"):
        if os.path.exists(os.path.join(inc, "cblas.h")):
            for libdir in ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib"):
                if glob.glob(os.path.join(libdir, "libopenblas.so*")):
                    return [inc], ["openblas"]
    return None


def sources(pattern):
    return sorted(glob.glob(os.path.join("csrc", pattern)))


CUDA_HOME = find_cuda()
CBLAS = find_cblas()
DEBUG = os.environ.get("AMPC_DEBUG") == "1"

c_sources = sources("core/*.c") + sources("cpu/*.c") + sources("python/*.c")
cu_sources = sources("cuda/*.cu") if CUDA_HOME else []
cuda_host_sources = sources("cuda/*.c") if CUDA_HOME else []

define_macros = [("NPY_NO_DEPRECATED_API", "NPY_1_20_API_VERSION")]
include_dirs = [os.path.join(ROOT, "csrc")]
libraries = []
library_dirs = []
extra_link_args = ["-fopenmp"]
runtime_library_dirs = []
extra_objects = []

try:
    import numpy
    include_dirs.append(numpy.get_include())
except ImportError:  # pragma: no cover - numpy is a build requirement
    sys.exit("ampc needs numpy at build time: pip install numpy")

if CBLAS:
    define_macros.append(("AMPC_WITH_CBLAS", "1"))
    include_dirs += CBLAS[0]
    libraries += CBLAS[1]

if CUDA_HOME:
    define_macros.append(("AMPC_WITH_CUDA", "1"))
    include_dirs.append(os.path.join(CUDA_HOME, "include"))
    lib64 = os.path.join(CUDA_HOME, "lib64")
    library_dirs.append(lib64)
    runtime_library_dirs.append(lib64)
    # cudart statically, so importing never needs libcudart.so; cuBLAS/cuBLASLt dynamically.
    libraries += ["cudart_static", "dl", "rt", "pthread"]
    # cuBLAS is a separate package: a toolkit without it still builds (the GEMM path needs it).
    if glob.glob(os.path.join(lib64, "libcublasLt.so*")) and glob.glob(os.path.join(lib64, "libcublas.so*")):
        define_macros.append(("AMPC_WITH_CUBLAS", "1"))
        libraries += ["cublasLt", "cublas"]

c_flags = ["-std=c11", "-fopenmp", "-Wall", "-Wextra", "-Wno-unused-parameter", "-Wno-missing-field-initializers",
           "-fvisibility=hidden"]
c_flags += ["-O0", "-g"] if DEBUG else ["-O3", "-fno-math-errno"]


class AmpcBuildExt(build_ext):
    """Compiles C sources in parallel and only when they (or any header) changed, then .cu
    files with nvcc, then links one shared object."""

    def finalize_options(self):
        super().finalize_options()
        # Objects of a CUDA build and a CPU-only build differ (AMPC_WITH_CUDA): keep them apart so
        # switching AMPC_CUDA never links stale objects.
        self.build_temp = os.path.join(self.build_temp, "cuda" if CUDA_HOME else "cpu")
        # Always enter build_extension: the per-object time check below decides what to compile.
        # (setuptools' own check compares sources with the finished .so, which misses a source
        # edited while an earlier build was running.)
        self.force = True

    def build_extension(self, ext):
        self._compile_cuda(ext)
        compiler = self.compiler
        original_compile = compiler.compile
        jobs = int(os.environ.get("AMPC_JOBS", os.cpu_count() or 2))
        headers = [h for h in glob.glob("csrc/**/*.h", recursive=True) + glob.glob("csrc/**/*.def", recursive=True)]
        newest_header = max((os.path.getmtime(h) for h in headers), default=0)

        def compile_parallel(srcs, output_dir=None, macros=None, include_dirs=None, debug=0,
                             extra_preargs=None, extra_postargs=None, depends=None):
            objects = compiler.object_filenames(srcs, output_dir=output_dir)

            def one(pair):
                src, obj = pair
                if os.path.exists(obj) and os.path.getmtime(obj) >= max(os.path.getmtime(src), newest_header):
                    return obj
                original_compile([src], output_dir=output_dir, macros=macros, include_dirs=include_dirs,
                                 debug=debug, extra_preargs=extra_preargs, extra_postargs=extra_postargs)
                return obj

            with ThreadPoolExecutor(max_workers=jobs) as pool:
                list(pool.map(one, zip(srcs, objects)))
            return objects

        compiler.compile = compile_parallel
        try:
            super().build_extension(ext)
        finally:
            compiler.compile = original_compile

    def _compile_cuda(self, ext):
        if not cu_sources:
            return
        nvcc = os.path.join(CUDA_HOME, "bin", "nvcc")
        out_dir = os.path.join(self.build_temp, "cuda")
        os.makedirs(out_dir, exist_ok=True)
        arch = ["-gencode=arch=compute_80,code=sm_80", "-gencode=arch=compute_90,code=sm_90",
                "-gencode=arch=compute_90,code=compute_90"]
        flags = ["-O3", "-std=c++17", "-Xcompiler", "-fPIC,-fvisibility=hidden", "--expt-relaxed-constexpr",
                 "-DAMPC_WITH_CUDA=1", "-I" + os.path.join(ROOT, "csrc")] + arch
        headers = glob.glob("csrc/**/*.h", recursive=True) + glob.glob("csrc/**/*.cuh", recursive=True)
        newest_header = max((os.path.getmtime(h) for h in headers), default=0)
        jobs = int(os.environ.get("AMPC_JOBS", os.cpu_count() or 2))

        def one(src):
            obj = os.path.join(out_dir, os.path.basename(src) + ".o")
            if not (os.path.exists(obj) and os.path.getmtime(obj) >= max(os.path.getmtime(src), newest_header)):
                cmd = [nvcc, "-c", src, "-o", obj] + flags
                print(" ".join(cmd), flush=True)
                subprocess.check_call(cmd)
            return obj

        with ThreadPoolExecutor(max_workers=jobs) as pool:
            ext.extra_objects = list(pool.map(one, cu_sources)) + list(ext.extra_objects or [])


ext = Extension(
    "ampc._C",
    sources=c_sources + cuda_host_sources,
    include_dirs=include_dirs,
    define_macros=define_macros,
    libraries=libraries,
    library_dirs=library_dirs,
    runtime_library_dirs=runtime_library_dirs,
    extra_compile_args=c_flags,
    extra_link_args=extra_link_args + (["-lstdc++"] if CUDA_HOME else []),
    extra_objects=extra_objects,
)

setup(
    ext_modules=[ext],
    cmdclass={"build_ext": AmpcBuildExt},
    package_dir={"": "python"},
    packages=find_packages(where="python"),
)
