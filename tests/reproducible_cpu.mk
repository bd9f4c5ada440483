# The same digits on every x86 CPU. Strict nbval compares committed outputs digit for digit,
# and a model trained for hundreds of steps (chapters 10 and 12 to 14) ends with other digits
# when PyTorch's kernels take a CPU's AVX-512 paths instead of its AVX2 ones: chapter 14's
# retrained GPT printed 2.59 bits on the machine its outputs were committed from and 2.58 on
# an AMD EPYC with AVX2 only. These pin PyTorch's own kernels (ATen), MKL's and oneDNN's to
# their AVX2 paths, which every CPU the course runs on has.
#
# The Makefile exports them to everything it runs (make test, make execute, make bench), and
# tests/conftest.py sets them for a pytest started by hand: they are read from here.
export ATEN_CPU_CAPABILITY = avx2
export MKL_CBWR = AVX2
export ONEDNN_MAX_CPU_ISA = AVX2
