# Cowatch: the two set-up commands from the README, and their parts.
#   make demo   — a local room of headless viewers on a generated film (installs what is missing)
#   make test   — every test (installs what is missing)
#   make install — release programs, man pages, completions, systemd units (PREFIX, DESTDIR);
#                  make uninstall removes them; make deb packages them
SHELL := /bin/bash
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
PREFIX ?= /usr/local
DESTDIR ?=
# The Swift runtime is linked into the installed programs, so they (and the .deb) need no Swift.
RELEASE_FLAGS := -c release --static-swift-stdlib
# Install programs already built there instead of building release ones (the install test uses
# the debug build: BUILD_DIR=.build/debug).
BUILD_DIR ?=

.PHONY: deps test-deps build test demo bench clean release install uninstall deb

# libmpv-dev (the player), ffmpeg (test films), openssl (a real TLS client and certificates for the
# security tests) and redis-server (the cluster tests' room directory), from Debian, only when missing.
deps:
	@missing=""; \
	pkg-config --exists mpv 2>/dev/null || missing="$$missing libmpv-dev"; \
	command -v ffmpeg >/dev/null || missing="$$missing ffmpeg"; \
	command -v openssl >/dev/null || missing="$$missing openssl"; \
	command -v redis-server >/dev/null || [ -x /usr/bin/redis-server ] || missing="$$missing redis-server"; \
	[ -z "$(WITH_MPV)" ] || command -v mpv >/dev/null || missing="$$missing mpv"; \
	command -v pkg-config >/dev/null || missing="$$missing pkg-config"; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing >/dev/null; \
	fi

# The hosting-from-home tests' router: miniupnpd (UPnP-IGD, NAT-PMP, PCP) over nftables, in
# network namespaces made with iproute2 (the tests are skipped, visibly, when not root); the
# Syncplay tests' peers: Debian's syncplay-server (without its recommended certbot), the
# pyOpenSSL its --tls needs, and Syncplay's own client (run --no-gui) with the mpv it drives.
test-deps: deps
	@{ command -v syncplay-server >/dev/null || [ -x /usr/bin/syncplay-server ]; } && [ -x /usr/bin/syncplay ] && [ -x /usr/bin/mpv ] \
	  && /usr/bin/python3 -c 'import OpenSSL' 2>/dev/null || { \
	  echo "installing: syncplay-server syncplay mpv python3-openssl"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends syncplay-server syncplay mpv python3-openssl >/dev/null; }
	@missing=""; \
	[ -x /usr/sbin/miniupnpd ] || missing="$$missing miniupnpd-nftables"; \
	command -v nft >/dev/null || [ -x /usr/sbin/nft ] || missing="$$missing nftables"; \
	command -v ip >/dev/null || [ -x /usr/sbin/ip ] || [ -x /sbin/ip ] || missing="$$missing iproute2"; \
	if [ -n "$$missing" ] && [ "$$(id -u)" = 0 ]; then \
	  echo "installing:$$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	fi

build: deps
	swift build

test: test-deps
	swift build --build-tests
	# A short benchmark run first (debug build, 3 s per scenario): every scenario must run end to end.
	.build/debug/cowatch-bench scenarios --duration 3 --only steady,steady-video,jitter,jitter-loss,wifi,asymmetric --out .build/bench-smoke
	# Every suite in one run: the in-process daemon tests whose outcome depends on time move a manual
	# clock (the room's deadlines never see the machine's load; the others only wait, with generous
	# bounds, for deliveries), the pure core's long computations run at nice 19 on threads
	# of their own (ComputeBound), and the process-driving suites wait by suspending, at most one
	# test per core at once (RealProcesses). The connection churn loads both cores on purpose: last.
	swift test --skip-build --skip ConnectionChurnTests
	swift test --skip-build --filter ConnectionChurnTests

# MEDIA reaches the script through the environment (make exports command-line variables), so a
# name with spaces or quotes stays one name.
demo: deps
	swift build
	scripts/demo.sh

bench: WITH_MPV=1
bench: deps
	swift build -c release
	.build/release/cowatch-bench $(BENCH_ARGS)

release: deps
	for product in cowatchd cowatch cowatch-server; do swift build $(RELEASE_FLAGS) --product $$product || exit 1; done

install: $(if $(BUILD_DIR),,release)
	BIN_DIR="$(if $(BUILD_DIR),$(BUILD_DIR),$$(swift build $(RELEASE_FLAGS) --show-bin-path))" \
	  DESTDIR="$(DESTDIR)" PREFIX="$(PREFIX)" scripts/install.sh install

uninstall:
	DESTDIR="$(DESTDIR)" PREFIX="$(PREFIX)" scripts/install.sh uninstall

# A Debian package of the release programs: dist/cowatch_VERSION_ARCH.deb.
deb: release
	scripts/deb.sh "$$(swift build $(RELEASE_FLAGS) --show-bin-path)"

clean:
	rm -rf .build demo-out dist
