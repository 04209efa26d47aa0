# sandboy — build, test, demo and benchmark. Every target sets up what it
# needs on a fresh Debian 12 machine (as root): Debian packages, rustup
# targets. Nothing installed by hand is assumed.

SHELL := /bin/bash
export CARGO_TARGET_DIR ?= $(CURDIR)/target
# Binaries are built for the host's own triple, named (.cargo/config.toml).
HOST_TRIPLE := $(shell rustc -vV | sed -n 's/^host: //p')
BIN_ROOT := $(CARGO_TARGET_DIR)/$(HOST_TRIPLE)
APT_PACKAGES := runc crun busybox-static podman containerd libseccomp-dev pkg-config \
                gcc libc6-dev iproute2 procps jq hyperfine python3 python3-jsonschema \
                golang-github-opencontainers-specs-dev
PROBE := $(CARGO_TARGET_DIR)/probes/probe

.PHONY: all deps build components probes test demo bench install clean lint fuzz soak

all: build

# Debian packages (skipped when all are present) and the wasm32 target.
deps:
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "==> apt-get install$$missing"; \
	  apt-get update -qq -o DPkg::Lock::Timeout=300 && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=300 $$missing >/dev/null; \
	fi
	@for t in wasm32-unknown-unknown wasm32-wasip2; do rustup target list --installed | grep -qx $$t || rustup target add $$t; done

# Test targets are built with the binaries so that dev-dependency features
# unify once: `cargo test` afterwards reuses everything instead of building
# wasmtime a second time.
build: deps
	cargo build --workspace --bins --tests

components: deps
	bash components/build.sh

probes: deps
	@mkdir -p $(dir $(PROBE))
	gcc -static -O2 -Wall -o $(PROBE) tests/probes/probe.c

test: build components probes
	@rm -f $(CARGO_TARGET_DIR)/skipped.log
	cargo test --workspace --no-fail-fast -- --test-threads=2
	cargo test --manifest-path components/Cargo.toml -p sandboy-adapter-input -p sandboy-adapter-passthrough -p sandboy-adapter-infersharp
	@bash tests/summary.sh $(CARGO_TARGET_DIR)/skipped.log

# Fuzz every parser of untrusted input for FUZZ_SECONDS each (findings are
# written to fuzz/corpus/<target>/finding-*, exit 1).
FUZZ_SECONDS ?= 60
fuzz: deps
	cargo run --release -p sandboy-fuzz -- --seconds $(FUZZ_SECONDS) $(FUZZ_TARGETS)

lint:
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -- -D warnings

demo: build components probes
	bash demo/demo.sh

# BENCH_PROFILE=debug measures the dev build instead (no release build).
BENCH_PROFILE ?= release
bench: deps components probes
	cargo build --workspace --bins $(if $(filter release,$(BENCH_PROFILE)),--release,)
	BENCH_PROFILE=$(BENCH_PROFILE) bash bench/bench.sh

# 5,000 run/delete cycles and 2,000 execs into one container (SOAK_RUNS,
# SOAK_EXECS for a shorter run): peak RSS, host fds, mounts, cgroups, zombies
# and the state root's size at the start and the end; then SIGKILL of every
# command at SOAK_KILL_TRIALS spread moments (20 in `make test`), each
# followed by the debris check. Nothing timed in `test`.
SOAK_KILL_TRIALS ?= 200
soak: build
	SANDBOY=$(BIN_ROOT)/debug/sandboy python3 tests/soak/soak.py
	SANDBOY_KILL_TRIALS=$(SOAK_KILL_TRIALS) cargo test -p sandboy-tests --test reliability kill_ -- --test-threads=1 --nocapture

# PREFIX (default /usr/local): binaries in $(PREFIX)/bin, the adapter
# registry, components and policy in $(PREFIX)/share/sandboy (docs/adapt.md).
# INSTALL_PROFILE=debug installs the dev build instead (no release build;
# built like `make build`, so the test build's features are reused).
PREFIX ?= /usr/local
INSTALL_PROFILE ?= release
SHARE := $(PREFIX)/share/sandboy
install: deps components
	cargo build --workspace --bins $(if $(filter release,$(INSTALL_PROFILE)),--release,--tests)
	install -d $(PREFIX)/bin $(SHARE)/components $(SHARE)/policies
	install -m 0755 $(BIN_ROOT)/$(INSTALL_PROFILE:dev=debug)/sandboy $(PREFIX)/bin/sandboy
	install -m 0755 $(BIN_ROOT)/$(INSTALL_PROFILE:dev=debug)/sandboy-wasm $(PREFIX)/bin/sandboy-wasm
	install -m 0755 $(BIN_ROOT)/$(INSTALL_PROFILE:dev=debug)/sandboy-spec-gen $(PREFIX)/bin/sandboy-spec-gen
	install -m 0644 components/adapters.toml $(SHARE)/adapters.toml
	install -m 0644 $(CARGO_TARGET_DIR)/components/infersharp.wasm $(CARGO_TARGET_DIR)/components/passthrough.wasm $(SHARE)/components/
	install -m 0644 policies/ownaudit-adapter.toml $(SHARE)/policies/ownaudit-adapter.toml

clean:
	cargo clean
