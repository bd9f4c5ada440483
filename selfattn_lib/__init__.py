"""Helper library for the course *Self-Attention, Step by Step*.

Every chapter of the course writes its own version of a concept first and then checks it
against this library. One module per concept, in the order the course teaches them
(:data:`CONCEPT_MODULES`); a concept module imports only earlier ones:

``similarity`` → ``softmax`` → ``kernel_regression`` → ``attention`` → ``masks`` → ``multihead``
→ ``positional`` → ``encoder`` (NumPy only), then ``layers``, ``transformer``, ``tasks`` and
``training`` (PyTorch), then
``attention_cost`` → ``kv_cache`` → ``online_softmax`` (NumPy, attention at scale), then
``sampling`` → ``tokenization`` (NumPy) → ``rotary`` → ``grouped_query`` → ``sliding_window``
→ ``language_model`` (PyTorch: rotary positions, grouped-query attention, sliding windows and
a small GPT that can use them), then ``flash_attention`` (NumPy: FlashAttention's tiled pass),
then ``induction`` (PyTorch: an attention-only model, its induction heads and their scores).

Beside them: ``embeddings`` (a small word-vector set), ``plotting`` (figures: shared
primitives and one module per chapter), ``widgets`` (interactive wrappers) and ``exercises``
(the exercise checkers: a kit and one module per chapter).

Axis names
----------
All arrays are batch-first. The same names are used in every docstring and shape comment
(see ``book/notation.md``):

========  ==============================================================
``B``     batch size (number of sequences processed together)
``T_q``   number of query positions (length of the sequence that asks)
``T_k``   number of key/value positions (length of the sequence attended to)
``D``     model (embedding) dimension; ``D_k``/``D_v`` for key and value sizes
``H``     number of attention heads
``H_kv``  number of key/value heads (grouped-query attention; ``H_kv`` divides ``H``)
``D_h``   size of one head, ``D_h = D / H``
``V``     vocabulary size (the number of distinct tokens; logits are ``(B, T, V)``)
========  ==============================================================

Masks are boolean and ``True`` means "may attend", as in
``torch.nn.functional.scaled_dot_product_attention``.

Importing this package never imports torch.
"""

#: The version, defined only here: pyproject.toml reads it (CONTRIBUTING.md, "Releasing").
__version__ = "0.1.0"

#: The concept modules in teaching order: each may import only the ones before it.
CONCEPT_MODULES = (
    "similarity",
    "softmax",
    "kernel_regression",
    "attention",
    "masks",
    "multihead",
    "positional",
    "encoder",
    "layers",
    "transformer",
    "tasks",
    "training",
    "attention_cost",
    "kv_cache",
    "online_softmax",
    "sampling",
    "tokenization",
    "rotary",
    "grouped_query",
    "sliding_window",
    "language_model",
    "flash_attention",
    "induction",
)
