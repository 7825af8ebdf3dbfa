"""Reference solutions for Chapter 3, "Coding Attention Mechanisms".

One module per book section or exercise, with the same API as the student stubs in
``grader/exercises/``:

- ``sec3_3_simple_attention``      3.3   attention without trainable weights
- ``sec3_4_self_attention``        3.4   scaled dot-product attention with trainable weights
- ``sec3_5_causal_attention``      3.5   causal (masked) attention with dropout
- ``sec3_6_multi_head_attention``  3.6   multi-head attention
- ``exercise3_1_weight_transfer``  Exercise 3.1
- ``exercise3_2_two_dim_output``   Exercise 3.2
- ``exercise3_3_gpt2_attention``   Exercise 3.3
"""
