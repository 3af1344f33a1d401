# benchctl — build, lint, test, demo. `make test` is what CI runs (.ci/run).
SHELL := /bin/bash
GO ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
LDFLAGS := -X main.version=$(VERSION) -X main.commit=$(COMMIT)
GOBIN := $(shell $(GO) env GOPATH)/bin
# go-nvml's cgo code calls NVML functions its header marks deprecated: about 150 lines of
# the C compiler's warnings at a first build, of no use to anyone building benchctl. A
# CGO_CFLAGS of one's own is kept, with the flag added.
CGO_CFLAGS ?= -O2 -g
CGO_CFLAGS += -Wno-deprecated-declarations
export CGO_CFLAGS
STATICCHECK_VERSION := v0.8.2
EXAMPLES := dummy cpubench allreduce
# Unit-test packages: everything but the end-to-end suite.
UNIT_PKGS = $(shell $(GO) list ./... | grep -Ev '/tests(/|$$)')

.PHONY: all build examples lint unit e2e test demo testbed-up testbed-down fuzz clean docs man schema install

all: build

# benchctl and its remote-launch agent (static: it runs in any image, for the MPI launchers).
build:
	$(GO) build -trimpath -ldflags "$(LDFLAGS)" -o bin/benchctl ./cmd/benchctl
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w" -o bin/benchctl-agent ./cmd/benchctl-agent

# Example benchmarks: static binaries in each example's build context (FROM scratch images).
examples:
	@for ex in $(EXAMPLES); do \
	  echo "building example $$ex"; \
	  CGO_ENABLED=0 $(GO) build -trimpath -o models/$$ex/bin/$$ex ./models/$$ex || exit 1; \
	done

$(GOBIN)/staticcheck:
	$(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

lint: $(GOBIN)/staticcheck
	@out="$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))"; \
	  if [ -n "$$out" ]; then echo "gofmt: these files need formatting:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GOBIN)/staticcheck ./...

# Unit tests, all with the race detector (several packages are concurrent).
unit:
	$(GO) test -race -count=1 $(UNIT_PKGS)

# End-to-end tests on the testbed (real Slurm + one Docker Engine per node).
e2e: build examples
	tests/run-e2e.sh

test: lint unit e2e

# The demo: the main job as a user runs it, on the testbed's Slurm (reused when it is up,
# else started as root with only what the demo needs: Slurm and a Docker Engine per node):
# build, submit --nodes 3 --wait --collect of the allreduce example, the table and the
# report's path, and the commands to repeat by hand, each step with the time it took.
# Without Slurm, cpubench as a one-node job on the local Docker Engine.
demo:
	scripts/demo.sh

testbed-up:
	tests/testbed/up.sh
	tests/testbed/k8s-up.sh

testbed-down:
	tests/testbed/k8s-down.sh
	tests/testbed/down.sh

# The CLI reference in docs/cli (checked in; a test fails when it is stale) and man pages.
docs: build
	rm -rf docs/cli && bin/benchctl gen-docs markdown docs/cli

man: build
	rm -rf man && bin/benchctl gen-docs man man

# Install the binary and its man pages: $(DESTDIR)$(PREFIX)/bin/benchctl and
# $(DESTDIR)$(PREFIX)/share/man/man1/benchctl*.1 (make install PREFIX=$$HOME/.local for one user).
PREFIX ?= /usr/local
install: build man
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 0755 bin/benchctl $(DESTDIR)$(PREFIX)/bin/benchctl
	install -m 0755 bin/benchctl-agent $(DESTDIR)$(PREFIX)/bin/benchctl-agent
	install -m 0644 man/*.1 $(DESTDIR)$(PREFIX)/share/man/man1/

# The manifest's JSON Schema (docs/manifest.schema.json, checked in; a test fails when it is
# stale), generated from the manifest's Go types and their doc comments.
schema:
	$(GO) generate ./manifest/

fuzz:
	$(GO) test ./manifest -run '^$$' -fuzz FuzzParse -fuzztime 60s

clean:
	rm -rf bin $(foreach ex,$(EXAMPLES),models/$(ex)/bin)
