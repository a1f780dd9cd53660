# Included after each project() of llama.cpp (CMAKE_PROJECT_INCLUDE, set in config.toml):
# llama.cpp's AMX kernels crash on quantized weights (llama.cpp #20824), so x86-64 builds
# leave AMX out even where -march=native would enable it.
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
  add_compile_options(-mno-amx-tile -mno-amx-int8 -mno-amx-bf16)
endif()
