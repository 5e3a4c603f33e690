# Switchyard: `make run` and `make test` are all a newcomer needs; both install
# what is missing first. See README.md for the other targets.

SHELL := /bin/bash
.DEFAULT_GOAL := run
.PHONY: run test build watch e2e bench tools test-tools site server fmt clippy rust-test

# Where the demo server listens for `make run`.
ADDR ?= 127.0.0.1:3000

# CI builds once from scratch: incremental state would only cost disk and time.
ifdef CI
export CARGO_INCREMENTAL := 0
endif

## run: install what is missing, build, serve the demo on the embedded SQLite default.
run: tools site server
	@echo "==> Serving on http://$(ADDR)/ (demo data; Ctrl-C stops)"
	./target/debug/switchyard serve --addr $(ADDR) --demo

## test: install what is missing, then every check and test.
test: tools test-tools fmt clippy site server rust-test e2e
	@echo "==> All checks passed"

## build: the release build, target/release/switchyard with its site in target/site.
build: tools
	./scripts/build-site.sh release
	@echo "==> Building the release server"
	cargo build --release -p server
	@echo "==> Built target/release/switchyard with its site in target/site: it finds the site from any folder (deploy the binary with the site as site/ beside it)"

## watch: rebuild and restart on every change (installs cargo-watch when missing).
watch: tools
	@command -v cargo-watch >/dev/null || cargo install --locked cargo-watch
	cargo watch -w app -w engine -w model -w frontend -w server -w style -w public \
	  -s './scripts/build-site.sh debug && cargo build -p server && ./target/debug/switchyard serve --addr $(ADDR) --demo'

## e2e: the browser tests against the debug build.
e2e: test-tools site server
	@echo "==> Browser tests (Playwright driving /usr/bin/chromium)"
	cd end2end && npx playwright test

## bench: the benchmarks recorded in BENCHMARKS.md (engine fire path; what PostgreSQL's kept-number triggers cost a fire; fan-outs against a rate-limited provider; processes sharing PostgreSQL; drop folder; a fire through REST against a bare call; what compressing an answer costs; the 200-person load test; one workspace at full abuse beside another; page load and triage speed on the release build).
bench: build test-tools
	./scripts/with-postgres.sh cargo bench -p engine --features test-support --bench fire_path
	./scripts/with-postgres.sh ./scripts/bench-kept-counts.sh
	./scripts/with-postgres.sh cargo bench -p engine --features test-support --bench processes
	cargo bench -p engine --features test-support --bench fanout_provider
	cargo bench -p engine --bench drop_folder
	cargo bench -p server --bench rest_fire
	cargo bench -p server --bench compression
	cargo bench -p server --bench load
	cargo bench -p server --bench neighbours
	./scripts/with-postgres.sh cargo bench -p server --bench operations
	cd end2end && node bench/first-chip.mjs
	cd end2end && node bench/triage-speed.mjs

tools:
	@./scripts/install-tools.sh

test-tools:
	@./scripts/install-test-tools.sh

site:
	@./scripts/build-site.sh debug

server:
	@echo "==> Building the server (debug)"
	cargo build -p server

fmt:
	@echo "==> cargo fmt --check"
	cargo fmt --all -- --check

clippy:
	@echo "==> clippy (ssr: server, engine, app, model)"
	cargo clippy --workspace --exclude frontend --all-targets -- -D warnings
	@echo "==> clippy (hydrate: frontend, app, model for wasm32)"
	cargo clippy -p frontend -p app -p model --target wasm32-unknown-unknown --target-dir target/front -- -D warnings

rust-test:
	@echo "==> Rust tests on SQLite and PostgreSQL"
	./scripts/with-postgres.sh cargo test --workspace --exclude frontend -- --skip fuzz_
	@echo "==> Fuzz targets (importer, manifests, JSONPath, URLs, adapters' answers)"
	cargo test -p engine --features test-support fuzz_ -- --nocapture
