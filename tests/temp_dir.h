// TempDir: a fresh directory under /tmp for one test, removed with everything in it.
#pragma once

#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace streamfuse::testing {

class TempDir {
 public:
  TempDir() {
    char dir[] = "/tmp/streamfuse-test-XXXXXX";
    path_ = mkdtemp(dir);
  }
  ~TempDir() {
    std::error_code ignored;  // a destructor must not throw; a file still being written stays
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  // Writes `text` to a file of the directory and returns its path.
  std::string write(const std::string& name, const std::string& text,
                    bool executable = false) const {
    const std::string file = path_ + "/" + name;
    std::ofstream(file) << text;
    if (executable) chmod(file.c_str(), 0755);
    return file;
  }

 private:
  std::string path_;
};

}  // namespace streamfuse::testing
