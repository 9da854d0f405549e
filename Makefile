# recsync — the two commands for a fresh machine, plus the measurements.
#   make demo   builds recsync and runs the command-line walkthrough (scripts/demo.sh) in a temp dir
#   make test   runs every test
#   make generated        regenerates man/recsync.1 and completions/ from the command definitions
#   make check-generated  fails when the committed man page or completions are stale
SWIFT ?= swift

.PHONY: deps demo test bench build generated check-generated

# libgit2 (and pkg-config, which SwiftPM uses to find it) from Debian's apt when missing.
deps:
	@if ! pkg-config --exists libgit2 2>/dev/null; then \
		echo "installing libgit2-dev and pkg-config with apt-get"; \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq libgit2-dev pkg-config; \
	fi

build: deps
	$(SWIFT) build

demo: deps
	SWIFT=$(SWIFT) bash scripts/demo.sh

generated: deps
	SWIFT=$(SWIFT) bash scripts/generated.sh

check-generated: deps
	SWIFT=$(SWIFT) bash scripts/generated.sh --check

test: deps
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build

# Store-level figures (release build): write RECORDS records, fetch CHANGES changes.
RECORDS ?= 100000
CHANGES ?= 100
bench: deps
	$(SWIFT) build -c release --product recsync-bench
	/usr/bin/time -f "wall %e s, peak RSS %M KiB" .build/release/recsync-bench --records $(RECORDS) --changes $(CHANGES)
