"""Helper library for the course *Self-Attention, Step by Step*.

Every chapter of the course writes its own version of a concept first and then checks it
against this library. One module per concept, in the order the course teaches them:

``similarity`` → ``softmax`` → ``attention`` → ``masks`` → ``multihead`` → ``positional``
(NumPy only), plus ``embeddings`` (a small word-vector set), ``plotting`` (figures),
``widgets`` (interactive wrappers) and ``exercises`` (checkers for the exercises).

Axis names
----------
All arrays are batch-first. The same names are used in every docstring and shape comment
(see ``book/notation.md``):

=======  ==============================================================
``B``    batch size (number of sequences processed together)
``T_q``  number of query positions (length of the sequence that asks)
``T_k``  number of key/value positions (length of the sequence attended to)
``D``    model (embedding) dimension; ``D_k``/``D_v`` for key and value sizes
``H``    number of attention heads
``D_h``  size of one head, ``D_h = D / H``
=======  ==============================================================

Masks are boolean and ``True`` means "may attend", as in
``torch.nn.functional.scaled_dot_product_attention``.

Importing this package never imports torch.
"""

__version__ = "0.1.0"
