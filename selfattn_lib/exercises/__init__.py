"""Checkers for the exercises of every chapter.

A checker runs the learner's function on a few inputs and returns a :class:`Feedback` that
says *what* is wrong — a missing ``return``, a wrong shape, rows that do not sum to one, an
overflow for large inputs — instead of just "wrong". An exercise stub that still raises
``NotImplementedError`` is reported as "not attempted yet", so a notebook with untouched
stubs still runs from top to bottom.

Each checker is named ``check_<what the learner writes>`` and documents the signature it
expects. The checkers of chapter N live in ``chNN_<topic>.py``; all of them are importable
from here (``exercises.check_dot_product``). ``_kit.py`` holds what they share.
"""

from selfattn_lib.exercises._kit import Feedback
from selfattn_lib.exercises.ch01_similarity import (
    check_cosine_similarity,
    check_cosine_similarity_matrix,
    check_dot_product,
    check_nearest_neighbour,
)
from selfattn_lib.exercises.ch02_softmax import (
    check_log_softmax,
    check_log_sum_exp,
    check_temperature_for_top_weight,
    check_weights_after_scaling,
)
from selfattn_lib.exercises.ch03_self_attention import (
    check_attends_most_to_itself,
    check_batched_self_attention,
    check_spotlight_output,
    check_unshuffle,
)
from selfattn_lib.exercises.ch04_queries_keys_values import (
    check_cross_attention,
    check_design_projections,
    check_one_query_attention,
)
from selfattn_lib.exercises.ch05_scaling import (
    check_saturation_dimension,
    check_score_scale,
    check_softmax_jacobian,
)
from selfattn_lib.exercises.ch06_masks import (
    check_dependence,
    check_left_padding_mask,
    check_look_back_mask,
    check_masked_attention,
)
from selfattn_lib.exercises.ch07_multi_head import (
    check_head_contributions,
    check_head_weights,
    check_merge_heads,
    check_split_heads,
)
from selfattn_lib.exercises.ch08_positional import (
    check_closest_pair,
    check_decode_position,
    check_equivariance_gap,
    check_rope_half,
    check_split_layout_encoding,
)
from selfattn_lib.exercises.ch09_encoder import (
    check_encoder_layer_numpy,
    check_rms_norm,
    check_sublayer_connection,
)
from selfattn_lib.exercises.ch10_decoder import (
    check_break_the_model,
    check_decoder_self_mask,
    check_greedy_decode,
    check_shift_right,
    check_transformer_parameters,
)
from selfattn_lib.exercises.ch11_at_scale import (
    check_attend_with_cache,
    check_causal_blocked_attention,
    check_longest_sequence,
    check_merge_softmax_states,
)
from selfattn_lib.exercises.ch12_language_model import (
    check_apply_merges,
    check_next_token_probabilities,
    check_top_p_filter,
    check_train_bpe,
)
from selfattn_lib.exercises.ch13_modern_attention import (
    check_grouped_query_attention,
    check_rotate,
    check_tiled_attention,
    check_window_mask,
)
from selfattn_lib.exercises.ch14_attention_heads import (
    check_copying_score,
    check_half_losses,
    check_prefix_matching_score,
    check_previous_token_score,
)

__all__ = [
    "Feedback",
    "check_dot_product",
    "check_cosine_similarity",
    "check_cosine_similarity_matrix",
    "check_nearest_neighbour",
    "check_weights_after_scaling",
    "check_temperature_for_top_weight",
    "check_log_sum_exp",
    "check_log_softmax",
    "check_spotlight_output",
    "check_batched_self_attention",
    "check_attends_most_to_itself",
    "check_unshuffle",
    "check_one_query_attention",
    "check_design_projections",
    "check_cross_attention",
    "check_score_scale",
    "check_softmax_jacobian",
    "check_saturation_dimension",
    "check_look_back_mask",
    "check_left_padding_mask",
    "check_masked_attention",
    "check_dependence",
    "check_split_heads",
    "check_merge_heads",
    "check_head_weights",
    "check_head_contributions",
    "check_split_layout_encoding",
    "check_closest_pair",
    "check_equivariance_gap",
    "check_rope_half",
    "check_decode_position",
    "check_rms_norm",
    "check_sublayer_connection",
    "check_encoder_layer_numpy",
    "check_shift_right",
    "check_decoder_self_mask",
    "check_transformer_parameters",
    "check_greedy_decode",
    "check_break_the_model",
    "check_longest_sequence",
    "check_attend_with_cache",
    "check_merge_softmax_states",
    "check_causal_blocked_attention",
    "check_next_token_probabilities",
    "check_top_p_filter",
    "check_apply_merges",
    "check_train_bpe",
    "check_rotate",
    "check_grouped_query_attention",
    "check_window_mask",
    "check_tiled_attention",
    "check_previous_token_score",
    "check_prefix_matching_score",
    "check_half_losses",
    "check_copying_score",
]
