#!/usr/bin/env bash
# fuzz.sh: runs every Fuzz* target in the module for FUZZTIME (default 10s).
set -euo pipefail
time=${FUZZTIME:-10s}
grep -rl --include='*_test.go' '^func Fuzz' . | while read -r file; do
	pkg=./$(dirname "${file#./}")
	grep -o '^func Fuzz[A-Za-z0-9_]*' "$file" | sed 's/^func //' | while read -r target; do
		echo "fuzz $pkg $target ($time)"
		go test -run '^$' -fuzz "^${target}\$" -fuzztime "$time" "$pkg"
	done
done
