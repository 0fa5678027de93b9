#!/usr/bin/env bash
# red.sh TestA TestB ...: exits 0 only if every named test exists, runs and
# fails right now. A passing, skipped or missing test is not red.
set -uo pipefail
if [ $# -eq 0 ]; then echo "usage: make red TESTS='TestA TestB'" >&2; exit 2; fi
status=0
for name in "$@"; do
	out=$(go test -count=1 -json -run "^${name}\$" ./... 2>/dev/null)
	if echo "$out" | grep -q "\"Action\":\"fail\",\"Package\":\"[^\"]*\",\"Test\":\"${name}\""; then
		echo "red:     $name fails"
	elif echo "$out" | grep -q "\"Action\":\"pass\",\"Package\":\"[^\"]*\",\"Test\":\"${name}\""; then
		echo "not red: $name passes"; status=1
	elif echo "$out" | grep -q "\"Action\":\"skip\",\"Package\":\"[^\"]*\",\"Test\":\"${name}\""; then
		echo "not red: $name is skipped"; status=1
	else
		echo "not red: $name was not found (or did not compile)"; status=1
	fi
done
exit $status
