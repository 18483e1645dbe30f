#!/bin/bash
# Builds and runs the emulator's self-test (no Python): tools/cuda_emu/test/run_selftest.sh
set -e
cd "$(dirname "$0")/../../.."
out=${TMPDIR:-/tmp}/ampc_emu_selftest
mkdir -p $out
python3 tools/cuda_emu/gen.py $out tools/cuda_emu/test/selftest.cu
FLAGS="-std=c++17 -O1 -g -Itools/cuda_emu/include -Icsrc"
g++ $FLAGS -x c++ -c $out/selftest.cu -o $out/selftest.o
g++ $FLAGS -c tools/cuda_emu/emu_runtime.cpp -o $out/emu_runtime.o
g++ -o $out/selftest $out/selftest.o $out/emu_runtime.o
AMPC_EMU_LOG=$out/reports.log $out/selftest
echo "reports: $out/reports.log"
