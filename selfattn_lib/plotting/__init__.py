"""Figures used across the course: shared primitives (``base``) and one module per chapter.

Every function returns a :class:`matplotlib.figure.Figure` and never calls ``show``. Figures
are made with ``Figure()`` rather than ``pyplot``, so a notebook displays each one exactly
once (as the cell's value) and no figure is kept alive by pyplot's global state. Pass ``ax``
to draw into an existing axes instead (for small multiples); the axes' figure is returned.

A figure draws arrays that the concept modules computed; it does no attention maths of its
own. Colours: sequential data (weights in [0, 1]) uses ``viridis``; signed data uses the
diverging ``RdBu_r`` centred on zero; categorical lines use the Okabe–Ito palette. All three
are safe for the common forms of colour blindness.
"""

from selfattn_lib.plotting.architecture import record_shapes
from selfattn_lib.plotting.base import (
    COLUMN_WIDTH,
    DIVERGING_CMAP,
    LAYOUTS,
    OKABE_ITO,
    PHONE_COLUMN_WIDTH,
    PHONE_MIME,
    SEQUENTIAL_CMAP,
    bar_chart,
    column_width,
    current_layout,
    drawn_for,
    for_the_page,
    heatmap,
    new_axes,
    shared_colorbar,
    small_multiples,
    text_colour,
    vectors_2d,
)
from selfattn_lib.plotting.ch01_similarity import (
    angle_curves,
    dot_and_cosine_matrices,
    feature_products,
    similarity_geometry,
    similarity_matrix_diagram,
    two_rankings,
)
from selfattn_lib.plotting.ch02_softmax import (
    softmax_steps,
    temperature_weights,
)
from selfattn_lib.plotting.ch03_self_attention import (
    attention_maps_by_length,
    kernel_regression_fit,
    spotlight_attention,
    spotlight_weights,
    weighted_average_2d,
    weighted_average_flow,
)
from selfattn_lib.plotting.ch04_queries_keys_values import (
    attention_flow,
    one_query_steps,
    projected_attention_weights,
)
from selfattn_lib.plotting.ch05_scaling import (
    learning_rate_sweep,
    one_query_scaling,
    saturation_by_dimension,
    scaling_effect,
    versus_dimension,
)
from selfattn_lib.plotting.ch06_masks import (
    MASK_KINDS,
    mask_and_weights,
    next_word_mask,
    padded_batch,
)
from selfattn_lib.plotting.ch07_multi_head import (
    HEAD_LAYOUTS,
    head_layout,
    head_weights,
    multi_head_flow,
    split_steps,
)
from selfattn_lib.plotting.ch08_positional import (
    encoding_heatmap,
    positional_waves,
    rope_rotation,
)
from selfattn_lib.plotting.ch09_encoder import (
    depth_curves,
    encoder_layer_diagram,
    normalization_axes,
)
from selfattn_lib.plotting.ch10_decoder import (
    cross_attention_maps,
    decoder_layer_diagram,
    loss_curve,
    transformer_diagram,
    visible_characters,
)
from selfattn_lib.plotting.ch11_at_scale import (
    block_schedule,
    decoding_work,
    fast_and_slow_memory,
    kv_cache_growth,
    most_rescaled_row,
    scaling_plot,
)
from selfattn_lib.plotting.ch12_language_model import (
    decoding_cost,
    gpt_diagram,
    merges_and_length,
    next_character_bars,
    next_token_flow,
    sampling_flow,
    sampling_settings,
    training_bits,
)
from selfattn_lib.plotting.ch13_modern_attention import (
    bits_by_position,
    decode_bytes,
    kv_head_groups,
    rotary_step_flow,
    tile_schedule,
    traffic_by_length,
    window_masks,
)
from selfattn_lib.plotting.ch14_attention_heads import (
    ablation_bars,
    head_maps,
    induction_flow,
    ov_circuits,
    phase_change,
)

__all__ = [
    "record_shapes",
    "COLUMN_WIDTH",
    "PHONE_COLUMN_WIDTH",
    "PHONE_MIME",
    "LAYOUTS",
    "column_width",
    "current_layout",
    "drawn_for",
    "for_the_page",
    "shared_colorbar",
    "small_multiples",
    "text_colour",
    "MASK_KINDS",
    "HEAD_LAYOUTS",
    "DIVERGING_CMAP",
    "OKABE_ITO",
    "SEQUENTIAL_CMAP",
    "bar_chart",
    "heatmap",
    "new_axes",
    "vectors_2d",
    "feature_products",
    "similarity_geometry",
    "similarity_matrix_diagram",
    "angle_curves",
    "two_rankings",
    "dot_and_cosine_matrices",
    "temperature_weights",
    "softmax_steps",
    "attention_maps_by_length",
    "kernel_regression_fit",
    "spotlight_attention",
    "spotlight_weights",
    "weighted_average_2d",
    "weighted_average_flow",
    "attention_flow",
    "one_query_steps",
    "projected_attention_weights",
    "scaling_effect",
    "one_query_scaling",
    "versus_dimension",
    "learning_rate_sweep",
    "saturation_by_dimension",
    "mask_and_weights",
    "next_word_mask",
    "padded_batch",
    "head_layout",
    "head_weights",
    "multi_head_flow",
    "split_steps",
    "encoding_heatmap",
    "positional_waves",
    "rope_rotation",
    "depth_curves",
    "encoder_layer_diagram",
    "normalization_axes",
    "cross_attention_maps",
    "loss_curve",
    "decoder_layer_diagram",
    "transformer_diagram",
    "visible_characters",
    "block_schedule",
    "decoding_work",
    "fast_and_slow_memory",
    "kv_cache_growth",
    "most_rescaled_row",
    "scaling_plot",
    "decoding_cost",
    "gpt_diagram",
    "merges_and_length",
    "next_character_bars",
    "next_token_flow",
    "sampling_flow",
    "sampling_settings",
    "training_bits",
    "bits_by_position",
    "decode_bytes",
    "kv_head_groups",
    "rotary_step_flow",
    "tile_schedule",
    "traffic_by_length",
    "window_masks",
    "ablation_bars",
    "head_maps",
    "induction_flow",
    "ov_circuits",
    "phase_change",
]
