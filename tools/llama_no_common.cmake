# Included by CMake after each project() of the llama-cpp-python build (CMAKE_PROJECT_INCLUDE,
# set by tools/install.py). llama-cpp-python forces LLAMA_BUILD_COMMON on, but its Python
# package loads only libllama and ggml: llama.cpp's `common` library (and the cpp-httplib it
# builds) is over half of the build's CPU time and is never used. A plain variable set here, in
# llama.cpp's own directory scope, takes precedence over the cached option (policy CMP0077),
# so llama.cpp neither builds nor installs it.
if(PROJECT_NAME STREQUAL "llama.cpp")
    set(LLAMA_BUILD_COMMON OFF)
endif()
