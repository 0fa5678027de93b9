# Prism's developer entry points. `make serve` and `make test` do all set-up
# on a fresh machine; see README.md.

GO        ?= go
PKGS      ?= ./...
BASE      ?= origin/main
DEMO_DIR  ?= $(HOME)/.cache/prism/demo-model
ADDR      ?= 127.0.0.1:8080
TEST_TIMEOUT ?= 40m
# the tests that run short under -race (raceEnabled), run whole in make
# test's plain pass: internal/e2e's one seed, internal/app/server's one
# model family (raceShort)
E2E_FULL_SIZE := TestStructuredOutputOnRandomModels|TestToolCallsOnRandomModels|TestSampledTokensArePinned
SERVER_FULL_SIZE := TestReasoningBeforeFormat|TestReasoningBeforeDemandedCall|TestCallFormatsConstrained|TestPromptKeepsEarlierTurns
PRISM_TEST_POSTGRES_URL ?= postgres://postgres@127.0.0.1:5432/test?sslmode=disable

export PRISM_TEST_POSTGRES_URL
# go-nvml's C sources use declarations newer gcc marks deprecated; the
# warnings are noise in every -race build.
export CGO_CFLAGS ?= -O2 -g -Wno-deprecated-declarations


.PHONY: build serve test allocs docs check red fetch ort fixtures vet fmt lint fuzz hooks demo

STATICCHECK_VERSION ?= v0.8.2
GOBIN_DIR := $(shell $(GO) env GOPATH)/bin

## serve: fetch the runtime, build the demo model and serve it with
## examples/serve at ADDR (default 127.0.0.1:8080)
serve: ort demo
	@if [ -d examples/serve ]; then \
		$(GO) run ./examples/serve -model "$(DEMO_DIR)" -addr "$(ADDR)"; \
	else \
		echo "The demo model is ready at $(DEMO_DIR)."; \
		echo "examples/serve does not exist yet: there is no server to start."; \
	fi

## build: every main into bin/ (ignored by git; never commit a binary)
build:
	$(GO) build -o bin/ ./examples/... ./internal/cmd/...

demo:
	$(GO) run ./internal/cmd/mkmodel -demo -out "$(DEMO_DIR)"

## test: fetch what the tests need and run the whole suite with -race, then
## the allocation tests without it (the race detector allocates), and the
## tests that run short under -race at full size: engine/grammar's
## generation tests, internal/e2e's random-model generation and pinned
## samples, and internal/app/server's tests over many model families
test: fetch
	@$(MAKE) --no-print-directory fmt vet lint docs
	PRISM_ORT_LIB="$$($(GO) run ./internal/cmd/fetch ort)" \
		$(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) $(PKGS)
	@$(MAKE) --no-print-directory allocs
	$(GO) test -count=1 ./engine/grammar
	PRISM_ORT_LIB="$$($(GO) run ./internal/cmd/fetch ort)" \
		$(GO) test -count=1 -run '$(SERVER_FULL_SIZE)' ./internal/app/server
	PRISM_ORT_LIB="$$($(GO) run ./internal/cmd/fetch ort)" \
		$(GO) test -count=1 -run '$(E2E_FULL_SIZE)' ./internal/e2e
	CGO_ENABLED=0 $(GO) build ./...
	CGO_ENABLED=0 $(GO) vet ./...

## allocs: the allocation tests (every test using testing.AllocsPerRun is
## named *Alloc*), without -race
allocs:
	@bash internal/scripts/allocs-check.sh
	PRISM_ORT_LIB="$$($(GO) run ./internal/cmd/fetch ort)" \
		$(GO) test -count=1 -run 'Alloc' $(PKGS)

fetch:
	$(GO) run ./internal/cmd/fetch all >/dev/null

## docs: every variable, flag, endpoint and cited spec id is documented
docs:
	@bash internal/scripts/docs-check.sh

ort:
	$(GO) run ./internal/cmd/fetch ort

fixtures:
	$(GO) run ./internal/cmd/fetch fixtures

fmt:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

## lint: staticcheck, installed from the Go module proxy on first use
lint:
	@test -x "$(GOBIN_DIR)/staticcheck" || $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	"$(GOBIN_DIR)/staticcheck" $(PKGS)

## check: fast checks for a change against BASE (default origin/main)
check:
	@bash internal/scripts/check.sh "$(BASE)"

## red: succeed only if every test named in TESTS fails now
red:
	@bash internal/scripts/red.sh $(TESTS)

## fuzz: run every fuzz target for FUZZTIME each (default 10s)
fuzz:
	@bash internal/scripts/fuzz.sh

## hooks: opt in to the pre-commit hook
hooks:
	git config core.hooksPath .githooks
