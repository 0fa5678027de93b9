#!/usr/bin/env bash
# allocs-check.sh: every test that counts allocations (testing.AllocsPerRun)
# has "Alloc" in its name, so `make test`'s non-race pass (-run Alloc) runs
# it. The race detector allocates, so these tests are skipped or
# meaningless under -race.
set -uo pipefail
bad=$(git ls-files '*_test.go' | xargs awk '
	/^func / { name = $2; sub(/\(.*/, "", name) }
	/AllocsPerRun\(/ && name !~ /Alloc/ { print FILENAME ": " name " counts allocations but its name has no \"Alloc\"" }')
if [ -n "$bad" ]; then echo "$bad"; exit 1; fi
