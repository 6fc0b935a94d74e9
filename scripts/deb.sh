#!/usr/bin/env bash
# Builds dist/cowatch_VERSION_ARCH.deb from the release programs in $1 (built with the Swift
# runtime linked in, so the package needs no Swift): the files of `make install PREFIX=/usr`, with
# what Debian adds to them (man pages gzip-compressed, /usr/share/doc/cowatch/copyright from
# scripts/debian-copyright, changelog.gz), and Depends computed from the libraries the programs
# load (libmpv2, libc6, …).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:?the directory of the release programs}
version=$(sed -n 's/.*static let number = "\(.*\)"/\1/p' Sources/CowatchCore/Support/CowatchVersion.swift)
arch=$(dpkg --print-architecture)
stage=.build/deb/cowatch_${version}_$arch
rm -rf "$stage"
BIN_DIR=$bin DESTDIR=$stage PREFIX=/usr scripts/install.sh install >/dev/null

# Debian policy: man pages compressed with gzip -9n (no name, no time stamp: reproducible).
gzip -9n "$stage"/usr/share/man/man*/*.[0-9]
doc=$stage/usr/share/doc/cowatch
# Every SwiftPM package linked into the programs must have a paragraph in the copyright file.
for package in $(sed -n 's/.*"identity" *: *"\(.*\)".*/\1/p' Package.resolved); do
  grep -q "checkouts/$package/\*" scripts/debian-copyright \
    || { echo "deb: $package (Package.resolved) has no paragraph in scripts/debian-copyright" >&2; exit 1; }
done
install -m 644 scripts/debian-copyright "$doc/copyright"
# The version has no Debian revision (a native package), so the changelog is changelog.gz.
date=$(git log -1 --format=%cD 2>/dev/null || date -R)
printf 'cowatch (%s) unstable; urgency=medium\n\n  * Cowatch %s, packaged by scripts/deb.sh.\n\n -- %s  %s\n' \
  "$version" "$version" "Cowatch developers <cowatch@localhost>" "$date" | gzip -9n > "$doc/changelog.gz"
chmod 644 "$doc/changelog.gz"

# Each shared library a program links directly (NEEDED; ldd would add libmpv's own dependencies,
# which libmpv2's package already brings) must come from a Debian package; that package is a
# dependency, at least the version built against (upstream part).
depends=()
needed=$(for program in "$stage"/usr/bin/*; do objdump -p "$program" | awk '$1 == "NEEDED" { print $2 }'; done | sort -u)
resolved=$(ldd "$stage"/usr/bin/*)
for name in $needed; do
  # "libmpv.so.2 => /lib/…/libmpv.so.2 (…)", or for the loader "/lib64/ld-linux-x86-64.so.2 (…)".
  lib=$(awk -v name="$name" '
    $1 == name && $2 == "=>" { print $3; exit }
    substr($1, length($1) - length(name)) == "/" name { print $1; exit }' <<< "$resolved")
  [ -n "$lib" ] || { echo "deb: cannot find $name" >&2; exit 1; }
  owner=$(dpkg -S "$lib" 2>/dev/null || dpkg -S "/usr$lib" 2>/dev/null || dpkg -S "$(readlink -f "$lib")" 2>/dev/null || true)
  package=${owner%%:*}
  if [ -z "$package" ]; then
    echo "deb: $lib belongs to no Debian package (a Swift runtime library? build with --static-swift-stdlib)" >&2
    exit 1
  fi
  installed=$(dpkg-query -W -f='${Version}' "$package")
  upstream=${installed#*:}
  depends+=("$package (>= ${upstream%%-*})")
done
depends_line=$(printf '%s\n' "${depends[@]}" | sort -u | paste -sd, | sed 's/,/, /g')

mkdir -p "$stage/DEBIAN"
cat > "$stage/DEBIAN/control" <<CONTROL
Package: cowatch
Version: $version
Architecture: $arch
Maintainer: Cowatch developers <cowatch@localhost>
Section: video
Priority: optional
Installed-Size: $(du -sk --exclude=DEBIAN "$stage" | cut -f1)
Depends: $depends_line
Description: watch films together, in lockstep, with mpv
 cowatchd plays media in libmpv and keeps every friend's player in step
 against a shared reference clock; cowatch drives it from the shell;
 cowatch-server is the room server (TLS, room secrets, roles).
CONTROL
(cd "$stage" && find usr -type f -print0 | LC_ALL=C sort -z | xargs -0 md5sum) > "$stage/DEBIAN/md5sums"
mkdir -p dist
dpkg-deb --root-owner-group -Zxz --build "$stage" "dist/cowatch_${version}_$arch.deb" >/dev/null
echo "dist/cowatch_${version}_$arch.deb: $(du -h "dist/cowatch_${version}_$arch.deb" | cut -f1), Depends: $depends_line"
