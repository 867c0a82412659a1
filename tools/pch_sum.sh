#!/usr/bin/env bash
# Compiler launcher of the tests' shared precompiled header (Note [The precompiled header's
# checksum] in tests/CMakeLists.txt): runs the compile it is given (ccache and the compiler), and
# when that writes a precompiled header X.gch, writes X.gch.sum beside it: a SHA-256 of what the
# header is made of (the compile's arguments and the header preprocessed with its line markers
# and macro definitions, the build tree's path taken out), the same in every build tree of one
# checkout.
set -uo pipefail
args=("$@")
out=
for ((i = 0; i + 1 < ${#args[@]}; i++)); do
  [[ ${args[i]} == -o ]] && out=${args[i + 1]}
done
[[ $out == *.gch ]] || exec "$@"

# A stale sum would stand for an old header: it goes before the header is rebuilt, and comes back
# only once the new one is written.
rm -f "$out.sum"
"$@" || exit

# The same compile without the launcher, the output and the dependency file, preprocessing only.
compile=()
skip=0
for ((i = 0; i < ${#args[@]}; i++)); do
  a=${args[i]}
  if ((skip)); then
    skip=0
    continue
  fi
  case $a in
    -o | -MF | -MT | -MQ) skip=1 ;;
    -c | -MD | -MMD) ;;
    *) ((${#compile[@]} == 0)) && [[ $(basename "$a") == ccache ]] || compile+=("$a") ;;
  esac
done
{
  printf '%s\n' "${compile[@]}" | sed "s|$PWD|<build>|g"
  "${compile[@]}" -E -dD -o - | sed "s|$PWD|<build>|g"
} | sha256sum >"$out.sum.tmp" && mv "$out.sum.tmp" "$out.sum"
rm -f "$out.sum.tmp"
exit 0
