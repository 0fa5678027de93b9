#!/usr/bin/env bash
# red.sh TestA TestB ...: exits 0 only if every named test exists, runs and
# fails right now. A passing, skipped or missing test is not red.
set -uo pipefail
if [ $# -eq 0 ]; then echo "usage: make red TESTS='TestA TestB'" >&2; exit 2; fi
status=0
for name in "$@"; do
	# Only the packages that declare the test are run.
	pkgs=$(grep -rlE --include='*_test.go' "^func ${name}\(" . | xargs -r -n1 dirname | sort -u)
	if [ -z "$pkgs" ]; then echo "not red: $name was not found"; status=1; continue; fi
	out=$(go test -count=1 -json -run "^${name}\$" $pkgs 2>/dev/null)
	verdict() { echo "$out" | grep -q "\"Action\":\"$1\",\"Package\":\"[^\"]*\",\"Test\":\"${name}\""; }
	if verdict fail; then
		echo "red:     $name fails"
	elif verdict pass; then
		echo "not red: $name passes"; status=1
	elif verdict skip; then
		echo "not red: $name is skipped"; status=1
	else
		echo "not red: $name did not run (does its package compile?)"; status=1
	fi
done
exit $status
