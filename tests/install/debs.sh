#!/usr/bin/env bash
# The Debian packages as a machine's package manager sees them (tests/install/run.sh runs this on
# the packages it built; it also runs on its own):
#   1. lintian reports no error on any package (warnings are printed, not fatal);
#   2. every package carries /usr/share/doc/<package>/copyright (DEP-5, with the licence) and
#      changelog.Debian.gz, and names a maintainer;
#   3. into a fresh root, `dpkg --root` installs libember0, ember-tools and ember-backend-cpu:
#      `ember devices` lists cpu and nothing else; installing ember-backend-reference makes it
#      appear, removing it makes it go, and dpkg's own records agree;
#   4. with the cuda package installed and then removed (where it was built), the rest works:
#      the packaged cpu backend still agrees with the packaged reference (`ember conformance`).
# Maintainer scripts run chroot-less (the fresh root has no shell); Ember's do nothing there
# (Note [What every package carries] in cmake/EmberPackage.cmake).
# Usage: tests/install/debs.sh PACKAGES_DIR WORK_DIR
set -euo pipefail
pkgs=$(cd "${1:?usage: tests/install/debs.sh PACKAGES_DIR WORK_DIR}" && pwd)
work=${2:?usage: tests/install/debs.sh PACKAGES_DIR WORK_DIR}
fail() { echo "package check FAILED: $*" >&2; exit 1; }
# shellcheck source=tests/install/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
deb() { ls "$pkgs/$1"_*.deb; }

echo "-- lintian"
command -v lintian >/dev/null || fail "lintian is not installed (tools/setup.sh installs it)"
# lintian exits non-zero on errors; its report is kept whole for the log.
lintian --tag-display-limit 0 --allow-root "$pkgs"/*.deb >"$work/lintian.txt" 2>&1 || true
cat "$work/lintian.txt"
if grep -q '^E: ' "$work/lintian.txt"; then fail "lintian errors (above)"; fi
echo "lintian: no errors in $(ls "$pkgs"/*.deb | wc -l) packages"

for f in "$pkgs"/*.deb; do
  name=$(dpkg-deb -f "$f" Package)
  listing=$(dpkg-deb -c "$f" | awk '{print $6}')
  grep -qx "./usr/share/doc/$name/copyright" <<<"$listing" || fail "$name has no copyright file"
  grep -qx "./usr/share/doc/$name/changelog.Debian.gz" <<<"$listing" || fail "$name has no changelog"
  dpkg-deb -f "$f" Maintainer | contains '<.*@.*\..*>' || fail "$name has no maintainer address"
done
dpkg-deb --fsys-tarfile "$(deb ember-backend-cpu)" |
  tar -xO ./usr/share/doc/ember-backend-cpu/copyright | contains '^License: Apache-2.0' ||
  fail "ember-backend-cpu's copyright does not cover the oneDNN it ships"

echo "-- a fresh root, with dpkg"
root=$work/dpkg-root
rm -rf "$root" && mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates" "$root/var/lib/dpkg/triggers"
touch "$root/var/lib/dpkg/status"
# The root holds only Ember's packages; their system dependencies (libc6, libzip4, ...) are the
# host's, which the command below runs against.
dpkg_root() {
  PATH=/usr/sbin:/sbin:$PATH dpkg --root="$root" --log=/dev/null --force-script-chrootless \
    --force-depends --force-not-root "$@" >"$work/dpkg.log" 2>&1 || { cat "$work/dpkg.log"; fail "dpkg $*"; }
}
devices() { "$root/usr/bin/ember" devices | awk 'NF && $1 != "TYPE" && $1 != "best" {print $1}' | sort | tr '\n' ' '; }
installed() { dpkg-query --admindir="$root/var/lib/dpkg" -W -f='${Package} ${Status}\n' | awk '$4 == "installed" {print $1}' | sort | tr '\n' ' '; }

dpkg_root -i "$(deb libember0)" "$(deb ember-tools)" "$(deb ember-backend-cpu)"
[[ $(devices) == "cpu " ]] || fail "core + cpu: devices are '$(devices)', expected 'cpu '"
echo "libember0 + ember-tools + ember-backend-cpu: devices: $(devices)"
dpkg_root -i "$(deb ember-backend-reference)"
[[ $(devices) == "cpu reference " ]] || fail "after installing the reference package: '$(devices)'"
echo "+ ember-backend-reference: devices: $(devices)"
if ls "$pkgs"/ember-backend-cuda_*.deb >/dev/null 2>&1; then
  dpkg_root -i "$(deb ember-backend-cuda)"
  [[ $(devices) == "cpu cuda reference " ]] || fail "after installing the cuda package: '$(devices)'"
  dpkg_root -r ember-backend-cuda
  [[ -z $(find "$root" -name '*cuda*' -not -path "$root/var/lib/dpkg/*") ]] || fail "removing ember-backend-cuda left files"
  [[ $(devices) == "cpu reference " ]] || fail "after removing the cuda package: '$(devices)'"
  echo "+/- ember-backend-cuda: devices: $(devices)"
fi
"$root/usr/bin/ember" conformance --device cpu --filter add >"$work/conformance.txt" 2>&1 ||
  { cat "$work/conformance.txt"; fail "the cpu backend against the reference, from the packages"; }
echo "the packaged cpu backend agrees with the packaged reference: $(tail -1 "$work/conformance.txt")"
dpkg_root -r ember-backend-reference
[[ $(devices) == "cpu " ]] || fail "after removing the reference package: '$(devices)'"
[[ -z $(find "$root" -name '*reference*' -not -path "$root/var/lib/dpkg/*") ]] ||
  fail "removing ember-backend-reference left files: $(find "$root" -name '*reference*')"
[[ $(installed) == "ember-backend-cpu ember-tools libember0 " ]] || fail "dpkg records: $(installed)"
echo "- ember-backend-reference: devices: $(devices); installed: $(installed)"
echo "package check passed"
