#!/bin/bash
# The fuzzing smoke pass: builds every libFuzzer target (tests/fuzz/, with
# clang, ASan and UBSan) and runs each for ~5 s over its committed corpus
# (make fuzz-smoke). Proves the parsers of untrusted input (ELF files,
# _Py_DebugOffsets, line tables, rules) and the walker+symbolizer over
# random memory images survive fresh random input on every run, and that
# every regression input in the corpora still passes. Skips (77) when
# clang's libFuzzer runtime is not installed.
set -u
cd "$(dirname "$0")/../.."
rt=$(clang -print-resource-dir 2>/dev/null)/lib/linux/libclang_rt.fuzzer-x86_64.a
if ! command -v clang > /dev/null || [ ! -e "$rt" ]; then
	echo "skip: clang's libFuzzer runtime is absent (libclang-rt-dev)"
	exit 77
fi
make --no-print-directory fuzz-smoke
