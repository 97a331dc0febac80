#!/bin/bash
# Run only the unit test binaries given (make unit). Closing line as run_all.sh.
pass=0 fail=0
for b in "$@"; do
	if "$b" >/dev/null 2>&1; then pass=$((pass + 1)); echo "PASS  $b"; else fail=$((fail + 1)); echo "FAIL  $b"; fi
done
echo "unit: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
