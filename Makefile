# Cowatch: the two set-up commands from the README, and their parts.
#   make demo   — a local room of headless viewers on a generated film (installs what is missing)
#   make test   — every test (installs what is missing)
SHELL := /bin/bash
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: deps build test demo bench clean

# libmpv-dev (the player), ffmpeg (test films) and openssl (a real TLS client and certificates for the
# security tests), from Debian, only when missing.
deps:
	@missing=""; \
	pkg-config --exists mpv 2>/dev/null || missing="$$missing libmpv-dev"; \
	command -v ffmpeg >/dev/null || missing="$$missing ffmpeg"; \
	command -v openssl >/dev/null || missing="$$missing openssl"; \
	[ -z "$(WITH_MPV)" ] || command -v mpv >/dev/null || missing="$$missing mpv"; \
	command -v pkg-config >/dev/null || missing="$$missing pkg-config"; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing >/dev/null; \
	fi

build: deps
	swift build

test: deps
	swift build --build-tests
	# A short benchmark run first (debug build, 3 s per scenario): every scenario must run end to end.
	.build/debug/cowatch-bench scenarios --duration 3 --only steady,steady-video,jitter,jitter-loss,wifi,asymmetric --out .build/bench-smoke
	swift test --skip-build

demo: deps
	swift build
	scripts/demo.sh $(MEDIA)

bench: WITH_MPV=1
bench: deps
	swift build -c release
	.build/release/cowatch-bench $(BENCH_ARGS)

clean:
	rm -rf .build demo-out
