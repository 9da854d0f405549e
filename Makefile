# recsync — the two commands for a fresh machine, plus the measurements.
#   make install   builds a release recsync and installs it, its man page and completions under
#                  $(DESTDIR)$(PREFIX) (PREFIX=/usr/local); make uninstall removes those files
#   make demo   builds recsync and runs the command-line walkthrough (scripts/demo.sh) in a temp dir
#               (KEEP=1 keeps the temp dir and prints where it is)
#   make test   runs every test, the example app's (Examples/Notes) included
#   make docs   builds the DocC documentation of the library products into .build/docs
#   make format           formats the Swift sources with swift format (.swift-format)
#   make lint             fails when a Swift source is not as swift format would write it
#   make generated        regenerates man/recsync.1 and completions/ from the command definitions
#   make check-generated  fails when the committed man page or completions are stale
#   make soak SECONDS=3600   runs the sync simulation (random histories) for that long
#   make fuzz SECONDS=3600   runs the decoders under libFuzzer (address sanitizer) for that long
#   make fuzz-loop SECONDS=3600  the same decoders under the seeded mutation loop (no libFuzzer)
#   make kill-loop KILLS=1000    SIGKILLs push, pull and clone at random moments; nothing may be lost
SWIFT ?= swift
SECONDS ?= 60

.PHONY: install install-files uninstall deps test-deps demo test bench build generated check-generated soak fuzz fuzz-loop kill-loop docs check-layers format lint

# libgit2 (and pkg-config, which SwiftPM uses to find it) from Debian's apt when missing.
deps:
	@if ! pkg-config --exists libgit2 2>/dev/null; then \
		echo "installing libgit2-dev and pkg-config with apt-get"; \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq libgit2-dev pkg-config; \
	fi

# The tests' own servers: sshd (NetworkStoreTests skip their ssh cases, saying so, without it),
# nginx with fcgiwrap and openssl (HTTPSStoreTests' https server, likewise); SQLite for the
# example app (Examples/Notes keeps its notes in SQLite through GRDB).
test-deps: deps
	@if ! pkg-config --exists sqlite3 2>/dev/null; then \
		echo "installing libsqlite3-dev with apt-get (the example app in Examples/Notes uses SQLite)"; \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq libsqlite3-dev; \
	fi
	@if [ ! -x /usr/sbin/sshd ]; then \
		echo "installing openssh-server with apt-get (the ssh transport tests run a local sshd)"; \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$SUDO apt-get update -qq && $$SUDO DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openssh-server; \
	fi
	@if [ ! -x /usr/sbin/nginx ] || [ ! -x /usr/sbin/fcgiwrap ] || ! command -v openssl >/dev/null; then \
		echo "installing nginx, fcgiwrap and openssl with apt-get (the https tests run a local git server)"; \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$SUDO apt-get update -qq && $$SUDO DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx fcgiwrap openssl; \
	fi

build: deps
	$(SWIFT) build

demo: deps
	SWIFT=$(SWIFT) KEEP=$(KEEP) bash scripts/demo.sh

# Where each file goes: the binary, the man page, and the completions where each shell looks.
PREFIX ?= /usr/local
BIN ?= .build/release/recsync
INSTALLED = $(DESTDIR)$(PREFIX)/bin/recsync \
	$(DESTDIR)$(PREFIX)/share/man/man1/recsync.1 \
	$(DESTDIR)$(PREFIX)/share/bash-completion/completions/recsync \
	$(DESTDIR)$(PREFIX)/share/zsh/site-functions/_recsync \
	$(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/recsync.fish

# Release builds link the Swift runtime and Foundation into the binary (RELEASE_FLAGS): every
# command starts without the dynamic loader resolving their symbols, which was ~10 % of a
# status or a one-record push. RELEASE_FLAGS= builds one that loads them from the toolchain.
RELEASE_FLAGS ?= --static-swift-stdlib

install: deps
	$(SWIFT) build -c release $(RELEASE_FLAGS) --product recsync
	$(MAKE) install-files BIN=.build/release/recsync PREFIX='$(PREFIX)' DESTDIR='$(DESTDIR)'

# The copy step alone, for a binary built already (BIN, default the release build).
install-files:
	@test -x '$(BIN)' || { echo "install: no binary at $(BIN); run make install" >&2; exit 1; }
	install -d '$(DESTDIR)$(PREFIX)/bin' '$(DESTDIR)$(PREFIX)/share/man/man1' \
		'$(DESTDIR)$(PREFIX)/share/bash-completion/completions' '$(DESTDIR)$(PREFIX)/share/zsh/site-functions' \
		'$(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d'
	install -m 755 '$(BIN)' '$(DESTDIR)$(PREFIX)/bin/recsync'
	install -m 644 man/recsync.1 '$(DESTDIR)$(PREFIX)/share/man/man1/recsync.1'
	install -m 644 completions/recsync.bash '$(DESTDIR)$(PREFIX)/share/bash-completion/completions/recsync'
	install -m 644 completions/_recsync '$(DESTDIR)$(PREFIX)/share/zsh/site-functions/_recsync'
	install -m 644 completions/recsync.fish '$(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/recsync.fish'

# Removes only the files install put there; the directories stay (others may use them).
uninstall:
	rm -f $(INSTALLED)

generated: deps
	SWIFT=$(SWIFT) bash scripts/generated.sh

check-generated: deps
	SWIFT=$(SWIFT) bash scripts/generated.sh --check

test: test-deps lint
	bash scripts/check-layers.sh --self-test
	bash scripts/check-layers.sh
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build
	$(SWIFT) build --build-tests --package-path Examples/Notes
	$(SWIFT) test --skip-build --package-path Examples/Notes

# DocC for the library products, into .build/docs/<Target>.doccarchive.
docs: deps
	mkdir -p .build/docs
	for t in RecSyncModel RecSyncStore RecSyncEngine RecSyncSubscriptions RecSyncEncryption; do \
		$(SWIFT) package --allow-writing-to-directory .build/docs generate-documentation --target $$t \
			--output-path .build/docs/$$t.doccarchive --warnings-as-errors || exit 1; \
	done

# swift format (part of the toolchain), configured by .swift-format.
SWIFT_SOURCES = Sources Tests Examples/Notes/Sources Examples/Notes/Tests
format:
	$(SWIFT) format --in-place --recursive --parallel $(SWIFT_SOURCES)
lint:
	$(SWIFT) format lint --strict --recursive --parallel $(SWIFT_SOURCES)

# The structure rules the compiler does not keep (scripts/check-layers.sh); `make test` runs it.
check-layers:
	bash scripts/check-layers.sh --self-test
	bash scripts/check-layers.sh

# Store-level figures (release build): write RECORDS records, fetch CHANGES changes.
RECORDS ?= 100000
CHANGES ?= 100
bench: deps
	$(SWIFT) build -c release $(RELEASE_FLAGS) --product recsync-bench
	/usr/bin/time -f "wall %e s, peak RSS %M KiB" .build/release/recsync-bench --records $(RECORDS) --changes $(CHANGES)

# The sync simulation for SECONDS on each store (memory and git, side by side); prints
# histories run and steps taken, or the seed and shrunk replay of the first failure.
soak: deps
	$(SWIFT) build --build-tests
	RECSYNC_SOAK_SECONDS=$(SECONDS) $(SWIFT) test --skip-build --filter SimulationTests

# libFuzzer over every decoder of untrusted bytes (Sources/recsync-fuzz), in its own build
# directory so the sanitizer flags do not touch the normal build. New inputs go to
# .build/fuzz/corpus, crashes to .build/fuzz/crashes/ (replay: .build/fuzz/debug/recsync-fuzz FILE).
fuzz: deps
	$(SWIFT) build -c debug --product recsync-fuzz --scratch-path .build/fuzz \
		-Xswiftc -sanitize=fuzzer,address -Xswiftc -DRECSYNC_LIBFUZZER -Xswiftc -parse-as-library
	mkdir -p .build/fuzz/corpus .build/fuzz/crashes
	.build/fuzz/debug/recsync-fuzz -max_total_time=$(SECONDS) -max_len=4096 -print_final_stats=1 \
		-artifact_prefix=.build/fuzz/crashes/ .build/fuzz/corpus Fuzz/corpus

# The seeded mutation loop (no sanitizer, no coverage feedback) for SECONDS.
fuzz-loop: deps
	$(SWIFT) build --product recsync-fuzz
	.build/debug/recsync-fuzz --seconds $(SECONDS)

# SIGKILLs push, pull and clone at random moments on a local store, KILLS times; each kill is
# followed by a clean run that must succeed, and nothing may be lost (scripts/kill-loop.sh).
KILLS ?= 1000
kill-loop: deps
	KILLS=$(KILLS) SWIFT=$(SWIFT) bash scripts/kill-loop.sh
