"""Build of ampc: one extension, ampc._C, from the C core, the CPU kernels, the binding layer
and (when nvcc is found and AMPC_CUDA is not 0) the CUDA backend.

Environment:
  AMPC_CUDA=0        CPU-only build even where nvcc exists
  AMPC_CUDA=emu      the CUDA backend built for the CUDA emulator (tools/cuda_emu: no GPU, no
                     nvcc; g++ and fake CUDA headers): writes build/emu/lib and build/emu/pkg,
                     never the in-place extension. AMPC_EMU_SANITIZE=1 adds ASan/UBSan.
  AMPC_SANITIZE=1    with AMPC_CUDA=0: the CPU build under ASan/UBSan in build/asan/lib and
                     build/asan/pkg (`make test-asan`), never the in-place extension
  CUDA_HOME          where the CUDA toolkit is (else /usr/local/cuda, else nvcc on PATH)
  AMPC_BLAS=0        do not link a CBLAS (float32 GEMM uses ampc's blocked C kernel)
  AMPC_DEBUG=1       -O0 -g and sanitizer-friendly flags
  AMPC_JOBS=N        parallel compile jobs (default: number of CPUs)
  AMPC_CUDA_ARCHS    GPU architectures, e.g. "90" (default "80;90", plus PTX of the last)
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


EMU = os.environ.get("AMPC_CUDA") == "emu"
SANITIZE = os.environ.get("AMPC_SANITIZE") == "1" or (EMU and os.environ.get("AMPC_EMU_SANITIZE") == "1")
# A side build (the emulator's, a sanitized one) lives in build/<SIDE>, apart from the in-place extension.
SIDE = "emu" if EMU else "asan" if SANITIZE else None
EMU_DIR = os.path.join(ROOT, "tools", "cuda_emu")


def find_cuda():
    if os.environ.get("AMPC_CUDA", "1") in ("0", "emu"):
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


def find_cublas(cuda_home):
    """(include dir, lib dir, [library file names]) of cuBLASLt and cuBLAS, or None."""
    candidates = [(os.path.join(cuda_home, "include"), os.path.join(cuda_home, "lib64"))]
    try:  # the nvidia-cublas wheel: nvidia/cu13/{include,lib} (CUDA 13) or nvidia/cublas/{include,lib}
        import nvidia
        for root in list(nvidia.__path__):
            for sub in ("cu13", "cublas"):
                candidates.append((os.path.join(root, sub, "include"), os.path.join(root, sub, "lib")))
    except ImportError:
        pass
    for inc, lib in candidates:
        if not os.path.exists(os.path.join(inc, "cublasLt.h")):
            continue
        names = []
        for stem in ("libcublasLt.so", "libcublas.so"):
            found = sorted(glob.glob(os.path.join(lib, stem + "*")), key=len)
            if not found:
                break
            names.append(os.path.basename(found[0]))
        if len(names) == 2:
            return inc, lib, names
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
extra_link_args_cuda = []

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
    # cuBLAS/cuBLASLt: from the toolkit, or from PyPI's nvidia-cublas wheel (what PyTorch's CUDA
    # wheels install). Linked dynamically with an rpath to where they were found.
    CUBLAS = find_cublas(CUDA_HOME)
    if CUBLAS:
        cublas_inc, cublas_lib, cublas_names = CUBLAS
        define_macros.append(("AMPC_WITH_CUBLAS", "1"))
        include_dirs.append(cublas_inc)
        library_dirs.append(cublas_lib)
        runtime_library_dirs.append(cublas_lib)
        extra_link_args_cuda = ["-l:" + n for n in cublas_names]
    else:
        print("ampc: cuBLAS not found (toolkit or nvidia-cublas wheel): CUDA GEMM will raise", file=sys.stderr)

if EMU:  # the emulator's fake CUDA headers come before anything else
    define_macros += [("AMPC_WITH_CUDA", "1"), ("AMPC_WITH_CUBLAS", "1"), ("AMPC_CUDA_EMULATED", "1")]
    include_dirs.insert(0, os.path.join(EMU_DIR, "include"))
    cuda_host_sources = sources("cuda/*.c")
    extra_link_args_cuda = ["-lstdc++"]
if SANITIZE and CUDA_HOME:
    sys.exit("ampc: AMPC_SANITIZE=1 sanitizes the CPU build or the emulator's: add AMPC_CUDA=0 (or emu)")
SANITIZE_FLAGS = ["-fsanitize=address,undefined", "-fno-sanitize-recover=undefined", "-fno-omit-frame-pointer"] \
    if SANITIZE else []

c_flags = ["-std=c11", "-fopenmp", "-Wall", "-Wextra", "-Wno-unused-parameter", "-Wno-missing-field-initializers",
           "-fvisibility=hidden"]
c_flags += ["-O0", "-g"] if DEBUG else ["-O3", "-fno-math-errno"]
c_flags += SANITIZE_FLAGS
extra_link_args += SANITIZE_FLAGS


# Per-file nvcc flags. The optimizer and scaler kernels are memory-bound: without FMA contraction
# they compute exactly what the CPU kernels compute (same optim_math.h / amp_math.h formulas).
NVCC_FILE_FLAGS = {"cuda_optim.cu": ["-fmad=false"], "cuda_amp.cu": ["-fmad=false"]}


def up_to_date(obj, src, fallback_newest):
    """True when obj is newer than its source and every header it included (the compiler's
    dependency file obj.d, written by -MMD/-MD); without one, newer than every header."""
    if not os.path.exists(obj):
        return False
    t = os.path.getmtime(obj)
    dep = obj + ".d"
    if not os.path.exists(dep):
        return t >= max(os.path.getmtime(src), fallback_newest)
    with open(dep) as f:
        words = f.read().replace("\\\n", " ").split()
    deps = [w for w in words[1:] if not w.endswith(":")]
    try:
        return all(os.path.getmtime(d) <= t for d in deps + [src])
    except OSError:  # a header was removed or renamed
        return False


class AmpcBuildExt(build_ext):
    """Compiles C sources in parallel and only when they (or any header) changed, then .cu
    files with nvcc, then links one shared object."""

    def finalize_options(self):
        super().finalize_options()
        # Objects of a CUDA build and a CPU-only build differ (AMPC_WITH_CUDA): keep them apart so
        # switching AMPC_CUDA never links stale objects.
        self.build_temp = os.path.join(self.build_temp, SIDE or ("cuda" if CUDA_HOME else "cpu"))
        if SIDE:  # never the in-place extension others use
            self.inplace = 0
            self.build_lib = os.path.join(ROOT, "build", SIDE, "lib")
        # Always enter build_extension: the per-object time check below decides what to compile.
        # (setuptools' own check compares sources with the finished .so, which misses a source
        # edited while an earlier build was running.)
        self.force = True

    def build_extension(self, ext):
        self._compile_cuda(ext)
        self._compile_emu(ext)
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
                if up_to_date(obj, src, newest_header):
                    return obj
                original_compile([src], output_dir=output_dir, macros=macros, include_dirs=include_dirs,
                                 debug=debug, extra_preargs=extra_preargs,
                                 extra_postargs=list(extra_postargs or []) + ["-MMD", "-MF", obj + ".d"])
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
        # sm_80 and sm_90 machine code plus PTX of the newest for later GPUs; AMPC_CUDA_ARCHS="90"
        # builds one architecture (a quicker compile while developing, or on the GPU host).
        archs = [a for a in os.environ.get("AMPC_CUDA_ARCHS", "80;90").replace(",", ";").split(";") if a]
        arch = [f"-gencode=arch=compute_{a},code=sm_{a}" for a in archs]
        arch.append(f"-gencode=arch=compute_{archs[-1]},code=compute_{archs[-1]}")
        flags = ["-O3", "-std=c++17", "-Xcompiler", "-fPIC,-fvisibility=hidden", "--expt-relaxed-constexpr",
                 "-DAMPC_WITH_CUDA=1", "-I" + os.path.join(ROOT, "csrc")] + arch
        flags += ["-I" + d for d in include_dirs if d != os.path.join(ROOT, "csrc")]
        flags += ["-D%s=%s" % (k, v) for k, v in define_macros if k == "AMPC_WITH_CUBLAS"]
        headers = glob.glob("csrc/**/*.h", recursive=True) + glob.glob("csrc/**/*.cuh", recursive=True)
        newest_header = max((os.path.getmtime(h) for h in headers), default=0)
        jobs = int(os.environ.get("AMPC_JOBS", os.cpu_count() or 2))

        def one(src):
            obj = os.path.join(out_dir, os.path.basename(src) + ".o")
            if not up_to_date(obj, src, newest_header):
                cmd = [nvcc, "-c", src, "-o", obj, "-MD", "-MF", obj + ".d"] + flags + NVCC_FILE_FLAGS.get(
                    os.path.basename(src), [])
                print(" ".join(cmd), flush=True)
                subprocess.check_call(cmd)
            return obj

        with ThreadPoolExecutor(max_workers=jobs) as pool:
            ext.extra_objects = list(pool.map(one, cu_sources)) + list(ext.extra_objects or [])


    def _compile_emu(self, ext):
        """AMPC_CUDA=emu: every csrc/cuda/*.cu through tools/cuda_emu/gen.py, compiled as C++ with
        g++ against the emulator's headers, plus the emulator itself."""
        if not EMU:
            return
        gen_dir = os.path.join(self.build_temp, "gen")
        subprocess.check_call([sys.executable, os.path.join(EMU_DIR, "gen.py"), gen_dir] + sources("cuda/*.cu") +
                              sources("cuda/*.cuh"))
        out_dir = os.path.join(self.build_temp, "emu_obj")
        os.makedirs(out_dir, exist_ok=True)
        flags = ["-x", "c++", "-std=c++17", "-O2", "-g1", "-fPIC", "-fvisibility=hidden", "-fno-math-errno",
                 "-Wall", "-Wno-unused-function", "-Wno-unknown-pragmas", "-Wno-unused-variable",
                 "-Wno-unused-but-set-variable"] + SANITIZE_FLAGS
        flags += ["-I" + d for d in include_dirs]
        flags += ["-I" + os.path.join(ROOT, "csrc", "cuda")]
        flags += ["-D%s=%s" % (k, v) for k, v in define_macros]
        srcs = [os.path.join(gen_dir, os.path.basename(s)) for s in sources("cuda/*.cu")]
        srcs += [os.path.join(EMU_DIR, "emu_runtime.cpp"), os.path.join(EMU_DIR, "emu_cublaslt.cpp")]
        jobs = int(os.environ.get("AMPC_JOBS", os.cpu_count() or 2))

        def one(src):
            obj = os.path.join(out_dir, os.path.basename(src) + ".o")
            if not up_to_date(obj, src, float("inf")):
                cmd = ["g++"] + flags + ["-c", src, "-o", obj, "-MMD", "-MF", obj + ".d"]
                print(" ".join(cmd), flush=True)
                subprocess.check_call(cmd)
            return obj

        with ThreadPoolExecutor(max_workers=jobs) as pool:
            ext.extra_objects = list(pool.map(one, srcs)) + list(ext.extra_objects or [])

    def run(self):
        super().run()
        if SIDE:
            side_package(self.build_lib)


def side_package(build_lib):
    """build/<SIDE>/pkg/ampc: python/ampc's files (symlinks) with the side build's _C, so that
    PYTHONPATH=build/<SIDE>/pkg imports it without touching python/ampc/_C*.so."""
    pkg = os.path.join(ROOT, "build", SIDE, "pkg", "ampc")
    if os.path.isdir(pkg):
        shutil.rmtree(pkg)
    os.makedirs(pkg)
    src = os.path.join(ROOT, "python", "ampc")
    for name in os.listdir(src):
        if name.startswith("_C.") and name.endswith(".so") or name == "__pycache__":
            continue
        os.symlink(os.path.join(src, name), os.path.join(pkg, name))
    for so in glob.glob(os.path.join(build_lib, "ampc", "_C*.so")):
        os.symlink(so, os.path.join(pkg, os.path.basename(so)))
    print(f"ampc: {'emulated CUDA' if EMU else 'sanitized'} build in", pkg, flush=True)


ext = Extension(
    "ampc._C",
    sources=c_sources + cuda_host_sources,
    include_dirs=include_dirs,
    define_macros=define_macros,
    libraries=libraries,
    library_dirs=library_dirs,
    runtime_library_dirs=runtime_library_dirs,
    extra_compile_args=c_flags,
    extra_link_args=extra_link_args + extra_link_args_cuda + (["-lstdc++"] if CUDA_HOME else []),
    extra_objects=extra_objects,
)

setup(
    ext_modules=[ext],
    cmdclass={"build_ext": AmpcBuildExt},
    package_dir={"": "python"},
    packages=find_packages(where="python"),
)
