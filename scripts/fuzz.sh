#!/bin/bash
# Runs libFuzzer targets built by `make fuzz-build` (mk/fuzz.mk).
#   scripts/fuzz.sh SECONDS TARGET...
# Each target runs for SECONDS over its committed seeds (tests/fuzz/corpus/T,
# read only) plus a working corpus in build/fuzz/corpus/T that keeps what
# earlier runs found. Limits turn the failure classes we care about into
# findings: a hang (-timeout), an unbounded allocation (-malloc_limit_mb) or
# memory growth (-rss_limit_mb). A crash input lands in build/fuzz/artifacts/;
# minimise it and add it to tests/fuzz/corpus/T with the fix.
# Prints one line per target and appends rows to build/hardening/fuzz.tsv
# for the table in SECURITY.md (scripts/security_table.sh).
set -u
cd "$(dirname "$0")/.."
secs=${1:?usage: scripts/fuzz.sh SECONDS TARGET...}
shift
out=build/fuzz
mkdir -p "$out/artifacts" build/hardening
rows=build/hardening/fuzz.tsv
: > "$rows"
failed=0
for t in "$@"; do
	bin=$out/fuzz_$t
	[ -x "$bin" ] || { echo "fuzz: $bin missing (make fuzz-build)" >&2; exit 1; }
	mkdir -p "$out/corpus/$t"
	log=$out/$t.log
	"$bin" "$out/corpus/$t" "tests/fuzz/corpus/$t" -max_total_time="$secs" \
		-timeout=10 -rss_limit_mb=1024 -malloc_limit_mb=256 -print_final_stats=1 \
		-artifact_prefix="$out/artifacts/$t-" > "$log" 2>&1
	rc=$?
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
	cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1 | cut -d' ' -f2)
	corpus=$(ls "$out/corpus/$t" "tests/fuzz/corpus/$t" | grep -vc ':$')
	if [ "$rc" -eq 0 ]; then
		outcome="no crash, hang, leak or sanitizer report"
		printf 'fuzz %-14s ok    %8s execs in %ss, cov %s, corpus %s\n' "$t" "${execs:-?}" \
			"$secs" "${cov:-?}" "$corpus"
	else
		failed=1
		outcome="FAILED: $(grep -m1 -E 'ERROR|SUMMARY|timeout|out-of-memory' "$log")"
		printf 'fuzz %-14s FAIL  (rc %d) see %s\n' "$t" "$rc" "$log"
		grep -m3 -E 'ERROR|SUMMARY|Test unit written' "$log"
	fi
	printf 'fuzz\tfuzz_%s: %s s of random input, ASan+UBSan, %s execs\t%s\n' "$t" "$secs" \
		"${execs:-?}" "$outcome" >> "$rows"
done
exit $failed
