#!/usr/bin/env bash
# check.sh BASE: the fast checks for a change against BASE. Exit 0 unless a
# check failed; a check whose tool is missing says "skipped".
set -uo pipefail
base=${1:-origin/main}
git rev-parse -q --verify "$base^{commit}" >/dev/null || base=$(git rev-list --max-parents=0 HEAD | tail -1)
failed=0
report() { printf '%-10s %s\n' "$1" "$2"; }

if go build ./... 2>/tmp/prism-check-build; then report ok compile; else report FAIL compile; cat /tmp/prism-check-build; failed=1; fi
if go test -count=1 -short ./... >/tmp/prism-check-test 2>&1; then report ok "unit tests (-short)"; else report FAIL "unit tests"; tail -40 /tmp/prism-check-test; failed=1; fi

unformatted=$(gofmt -l $(git ls-files '*.go'))
if [ -z "$unformatted" ]; then report ok gofmt; else report FAIL "gofmt: $unformatted"; failed=1; fi

# Lint findings are reported only on lines this change touched.
changed_lines() {
	git diff -U0 "$base" -- '*.go' | awk '
		/^\+\+\+ b\// { file = substr($0, 7) }
		/^@@/ { split($3, a, ","); start = substr(a[1], 2); n = (a[2] == "" ? 1 : a[2]);
		        for (i = 0; i < n; i++) print file ":" start + i }'
}
changed_lines | sort -u >/tmp/prism-check-lines
filter() { while IFS= read -r line; do
	key=$(echo "$line" | sed -E 's#^(\./)?([^:]+):([0-9]+):.*#\2:\3#')
	grep -qxF "$key" /tmp/prism-check-lines && echo "$line"
done; }
vet_out=$(go vet ./... 2>&1 | filter)
if [ -z "$vet_out" ]; then report ok "go vet (changed lines)"; else report FAIL "go vet"; echo "$vet_out"; failed=1; fi
if command -v staticcheck >/dev/null; then
	sc_out=$(staticcheck ./... 2>&1 | filter)
	if [ -z "$sc_out" ]; then report ok "staticcheck (changed lines)"; else report FAIL staticcheck; echo "$sc_out"; failed=1; fi
else
	report skipped "staticcheck (go install honnef.co/go/tools/cmd/staticcheck@v0.8.2)"
fi

code_changed=$(git diff --name-only "$base" -- '*.go' ':!*_test.go' ':!internal/scripts' | head -1)
if [ -n "$code_changed" ] && ! git diff --name-only "$base" -- CHANGELOG.md | grep -q .; then
	report FAIL "changelog: Go code changed against $base but CHANGELOG.md did not"; failed=1
else
	report ok changelog
fi

bash internal/scripts/docs-check.sh || failed=1
if bash internal/scripts/heavy-files.sh "$base"; then report ok "no binaries or files over 1 MB"; else failed=1; fi
exit $failed
