# The environment in which the notebooks' committed outputs are made (make execute) and
# checked (strict nbval, the wheel-only run of tests/test_isolated_run.py). The Makefile
# exports it to everything it runs (make test, make execute, make bench), and
# conftest.py (at the root) sets it for a pytest started by hand, on any file: it is read
# from here.
#
# The same digits on every x86 CPU. Strict nbval compares committed outputs digit for digit,
# and a model trained for hundreds of steps (chapters 10 and 12 to 14) ends with other digits
# when PyTorch's kernels take a CPU's AVX-512 paths instead of its AVX2 ones: chapter 14's
# retrained GPT printed 2.59 bits on the machine its outputs were committed from and 2.58 on
# an AMD EPYC with AVX2 only. These pin PyTorch's own kernels (ATen), MKL's and oneDNN's to
# their AVX2 paths, which every CPU the course runs on has.
export ATEN_CPU_CAPABILITY = avx2
export MKL_CBWR = AVX2
export ONEDNN_MAX_CPU_ISA = AVX2
# Every figure a notebook shows carries its phone rendering, which only the site shows
# (selfattn_lib.plotting.PHONE_RENDERINGS). The runs that stand for a learner's (Colab's
# versions, the student copies) leave it out, as Colab and Jupyter do: it would draw every
# figure twice for nothing.
export SELFATTN_PHONE_RENDERINGS = 1
