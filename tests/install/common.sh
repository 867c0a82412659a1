# Helpers shared by the install checks (run.sh, debs.sh, wheel.sh); sourced, not run.

# Note [Checks that read their whole input]
# The checks run with `set -o pipefail`. `producer | grep -q pattern` returns as soon as grep
# finds the pattern, and a producer still writing then dies of SIGPIPE, which pipefail turns
# into a failed check: a check of a long listing or file (dpkg-deb -c, an extracted copyright)
# failed now and then although the pattern was there. `contains` reads everything it is given.

# contains <pattern>: whether standard input has a line matching <pattern> (grep's syntax).
contains() { grep -- "$1" >/dev/null; }
