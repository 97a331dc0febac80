#!/bin/bash
# Run only the unit test binaries given (make unit). Closing line as run_all.sh.
# A failed binary's output (its last 30 lines) follows its FAIL line.
pass=0 fail=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for b in "$@"; do
	if "$b" >"$log" 2>&1; then
		pass=$((pass + 1))
		echo "PASS  $b"
	else
		fail=$((fail + 1))
		echo "FAIL  $b"
		tail -n 30 "$log" | cut -c1-400 | sed 's/^/      | /'
	fi
done
echo "unit: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
