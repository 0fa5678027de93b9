#!/usr/bin/env bash
# docs-check.sh: every PRISM_* variable, example-main flag and HTTP endpoint
# that exists in the code is documented somewhere under docs/.
set -uo pipefail
missing=0
docs=$(cat docs/*.md README.md 2>/dev/null)
for var in $(git grep -ohE 'PRISM_[A-Z0-9_]+' -- '*.go' ':!*_test.go' | sort -u); do
	grep -q "$var" <<<"$docs" || { echo "undocumented variable: $var"; missing=1; }
done
# Flags: the first string literal of a flag definition (flag.String, fs.IntVar, ...).
for flag in $(git grep -ohE '\b[A-Za-z]+\.(String|Int|Int64|Uint|Uint64|Bool|Duration|Float64|Func|Text)(Var)?\([^"]*"[A-Za-z0-9-]+"' -- 'examples/*.go' 'internal/cmd/*.go' ':!*_test.go' | grep -oE '"[A-Za-z0-9-]+"$' | tr -d '"' | sort -u); do
	grep -qE -- "-$flag\b" <<<"$docs" || { echo "undocumented flag: -$flag"; missing=1; }
done
for ep in $(git grep -ohE '"(GET|POST|DELETE|PUT) /[a-z0-9/_{}.-]+' -- '*.go' ':!*_test.go' | tr -d '"' | awk '{print $2}' | sort -u); do
	grep -qF "$ep" <<<"$docs" || { echo "undocumented endpoint: $ep"; missing=1; }
done
if [ $missing -eq 0 ]; then printf '%-10s %s\n' ok "docs (variables, flags, endpoints)"; else printf '%-10s %s\n' FAIL docs; fi
exit $missing
