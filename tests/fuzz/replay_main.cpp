// Regression replay of a fuzz target: feeds every file of its corpus (the seeds and every input
// that ever crashed it) to LLVMFuzzerTestOneInput under the normal build, so `ctest` re-checks
// them. `<name>_replay FILE...` replays just the files given (to reproduce one crash).
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <gtest/gtest.h>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

namespace fs = std::filesystem;

std::vector<std::string> g_files;  // the files named on the command line, if any

std::vector<std::string> corpus_files() {
  if (!g_files.empty()) return g_files;
  std::vector<std::string> out;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(EMBER_FUZZ_CORPUS, ec), end; !ec && it != end;
       it.increment(ec)) {
    if (it->is_regular_file()) out.push_back(it->path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(FuzzReplay, EveryCorpusFileRunsCleanly) {
  const std::vector<std::string> files = corpus_files();
  ASSERT_FALSE(files.empty()) << "no corpus files in " << EMBER_FUZZ_CORPUS;
  for (const std::string& f : files) {
    SCOPED_TRACE(f);
    std::ifstream in(f, std::ios::binary);
    ASSERT_TRUE(in) << "cannot open " << f;
    const std::vector<uint8_t> bytes{std::istreambuf_iterator<char>(in),
                                     std::istreambuf_iterator<char>()};
    // A finding aborts the process (sanitizers are off here, but assertions and checks are not);
    // a clean return is a pass.
    EXPECT_EQ(LLVMFuzzerTestOneInput(bytes.data(), bytes.size()), 0);
  }
}

}  // namespace

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  for (int i = 1; i < argc; ++i) g_files.emplace_back(argv[i]);
  return RUN_ALL_TESTS();
}
