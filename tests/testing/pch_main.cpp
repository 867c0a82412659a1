// The program that owns the test binaries' shared precompiled header (tests/CMakeLists.txt); it
// is built, never run.
int main() {
  return 0;
}
