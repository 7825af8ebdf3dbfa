"""3.5 in the style of the chapter's MindSpore port: the mask kept as a non-trainable Parameter."""
import mindspore as ms
from mindspore import Parameter, Tensor, nn, ops

ms.set_context(mode=ms.PYNATIVE_MODE, device_target="Ascend")


def simple_causal_mask(num_tokens):
    return ops.tril(ops.ones((num_tokens, num_tokens), ms.float32))


def mask_and_renormalize(attn_weights):
    masked_simple = attn_weights * simple_causal_mask(attn_weights.shape[-1])
    row_sums = masked_simple.sum(axis=-1, keepdims=True)
    return masked_simple / row_sums


def masked_attention_weights(attn_scores, d_k):
    context_length = attn_scores.shape[-1]
    mask = ops.triu(ops.ones((context_length, context_length), ms.float32), diagonal=1)
    masked = attn_scores.masked_fill(mask.astype(ms.bool_), float("-inf"))
    return ops.softmax(masked / d_k ** 0.5, axis=-1)


class CausalAttention(nn.Cell):
    def __init__(self, d_in, d_out, context_length, dropout, qkv_bias=False):
        super().__init__()
        self.d_out = d_out
        self.W_query = nn.Dense(d_in, d_out, has_bias=qkv_bias)
        self.W_key = nn.Dense(d_in, d_out, has_bias=qkv_bias)
        self.W_value = nn.Dense(d_in, d_out, has_bias=qkv_bias)
        self.dropout = nn.Dropout(p=dropout)
        self.mask = Parameter(ops.triu(ops.ones((context_length, context_length), ms.float32), diagonal=1),
                              name="mask", requires_grad=False)

    def construct(self, x):
        b, num_tokens, d_in = x.shape
        keys = self.W_key(x)
        queries = self.W_query(x)
        values = self.W_value(x)
        attn_scores = ops.matmul(queries, keys.swapaxes(1, 2))
        attn_scores = attn_scores.masked_fill(self.mask.astype(ms.bool_)[:num_tokens, :num_tokens], float("-inf"))
        attn_weights = ops.softmax(attn_scores / keys.shape[-1] ** 0.5, axis=-1)
        attn_weights = self.dropout(attn_weights)
        return ops.matmul(attn_weights, values)
