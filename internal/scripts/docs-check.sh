#!/usr/bin/env bash
# docs-check.sh: every PRISM_* variable, example-main flag and HTTP endpoint
# that exists in the code is documented somewhere under docs/, and every spec
# id the code and docs cite is defined in docs/invariants.md, and the package
# graph of docs/architecture.md is the code's.
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
# Spec ids (I1, P9, SPEC-037 §2, SPEC-041 Q2, ADR-25, PLAT-095 ...): every id
# the code and docs cite has a row of its own in docs/invariants.md.
idre='\b(I[0-9]+|P[0-9]+|SPEC-[0-9]+|PLAT-[0-9]+|ADR-[0-9]+)\b( ?§ ?[0-9]+| Q[0-9]+\b)?'
defined=$(grep -oE '^\| [^|]+ \|' docs/invariants.md | sed -E 's/^\| (.*) \|$/\1/')
while IFS= read -r id; do
	[ -z "$id" ] && continue
	base=${id%% *}
	wants=("$base")
	[ "$id" != "$base" ] && wants+=("$id")
	for want in "${wants[@]}"; do
		grep -qxF -- "$want" <<<"$defined" || { echo "spec id cited but not defined in docs/invariants.md: $want"; missing=1; }
	done
done < <(git grep -ohE "$idre" -- '*.go' '*.md' '*.sh' Makefile ':!docs/invariants.md' | sed -E 's/ ?§ ?/ §/' | sort -u)
# The package graph in docs/architecture.md is generated from go list.
go run ./internal/cmd/depgraph -check docs/architecture.md || missing=1
if [ $missing -eq 0 ]; then printf '%-10s %s\n' ok "docs (variables, flags, endpoints, spec ids)"; else printf '%-10s %s\n' FAIL docs; fi
exit $missing
